import Table from 'cli-table3';
import { chalk, isStdoutTty } from './terminal.js';

/**
 * A table for humans: box-drawn on a TTY, tab-separated plain text when piped (so `cut` and
 * `awk` work on it).
 */
export function renderTable(head: string[], rows: Array<Array<string | number | null>>): string {
  if (!isStdoutTty()) {
    return [head, ...rows].map((r) => r.map((c) => (c === null ? '' : String(c))).join('\t')).join('\n');
  }
  const table = new Table({ head: head.map((h) => chalk.bold(h)), style: { head: [], border: [] } });
  for (const row of rows) table.push(row.map((c) => (c === null ? '' : String(c))));
  return table.toString();
}

/** `key: value` lines, aligned. */
export function renderFields(fields: Array<[string, string | number | null]>): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields
    .map(([k, v]) => `${chalk.dim(k.padEnd(width))}  ${v === null ? chalk.dim('—') : v}`)
    .join('\n');
}

export function heading(text: string): string {
  return chalk.bold.underline(text);
}
