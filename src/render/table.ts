import { fitTable, pipedTable } from './fit.js';
import { chalk, isStdoutTty, tableWidth } from './terminal.js';

/**
 * A table for humans: aligned columns under one rule that fit the terminal (long cells cut with
 * `…`, `--wide` for all of them) on a TTY; tab-separated text when piped (so `cut` and `awk` work
 * on it), every value in full with TAB and newline escaped and integers plain.
 */
export function renderTable(head: string[], rows: Array<Array<string | number | null>>): string {
  if (!isStdoutTty()) return pipedTable(head, rows);
  return fitTable(head, rows, tableWidth(), (h) => chalk.bold(h));
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
