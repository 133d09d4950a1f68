import { fitTable, hangingIndent, pipedTable, type Head } from './fit.js';

export type { Column, Head } from './fit.js';
import { chalk, isStdoutTty, tableWidth } from './terminal.js';

/**
 * A table for humans: aligned columns under one rule that fit the terminal on a TTY (headings
 * stacked, free text cut with `…`, low-value columns left out; ids and times never cut; `--wide`
 * for all of them); tab-separated text when piped (so `cut` and `awk` work
 * on it), every value in full with TAB and newline escaped and integers plain.
 */
export function renderTable(head: Head[], rows: Array<Array<string | number | null>>): string {
  if (!isStdoutTty())
    return pipedTable(
      head.map((h) => (typeof h === 'string' ? h : h.title)),
      rows,
    );
  return fitTable(head, rows, tableWidth(), (h) => chalk.bold(h));
}

/** `key: value` lines, aligned. */
export function renderFields(fields: Array<[string, string | number | null]>): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  // On a terminal a long value wraps under itself.
  return fields
    .map(([k, v]) =>
      v === null
        ? `${chalk.dim(k.padEnd(width))}  ${chalk.dim('—')}`
        : hangingIndent(`${chalk.dim(k.padEnd(width))}  `, String(v), tableWidth()),
    )
    .join('\n');
}

export function heading(text: string): string {
  return chalk.bold.underline(text);
}
