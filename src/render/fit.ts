/**
 * Tables that fit the terminal, and piped text a program can read back.
 *
 * On a terminal: columns aligned two spaces apart under one rule, the widest columns cut with `…`
 * until the table fits `process.stdout.columns` (unless `--wide`). Piped: one line per row, cells
 * separated by TAB, each value in full with TAB and newline escaped (`\t`, `\n`) and a backslash
 * doubled (`\\`) only where it would read as one of those escapes,
 * and numbers as plain integers (`1227`, not `1,227`).
 */

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
/** A column is never cut below this (its heading may be cut to it), so that it still says what it is. */
const MIN_COLUMN = 6;
const GAP = 2;

export type Cell = string | number | null;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** Display width: East Asian wide characters (CJK, full-width forms) take two cells. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const ch of stripAnsi(text)) width += isWide(ch.codePointAt(0) ?? 0) ? 2 : 1;
  return width;
}

function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

/** Cuts `text` to `width` display cells, ending in `…` when cut (colour is dropped from a cut cell). */
export function truncate(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  let out = '';
  let used = 0;
  for (const ch of stripAnsi(text)) {
    const w = isWide(ch.codePointAt(0) ?? 0) ? 2 : 1;
    if (used + w > width - 1) break;
    out += ch;
    used += w;
  }
  return `${out}…`;
}

function pad(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}

/** One cell of a terminal table: on one line (newlines and tabs shown as ⏎ and →). */
function terminalCell(cell: Cell): string {
  if (cell === null) return '';
  return String(cell).replace(/\r?\n/g, '⏎').replace(/\t/g, '→');
}

/** The widths that fit `maxWidth`: the widest columns give way first, none below its minimum. */
export function fitWidths(natural: number[], minimum: number[], maxWidth: number): number[] {
  const widths = [...natural];
  const total = () => widths.reduce((a, b) => a + b, 0) + GAP * Math.max(0, widths.length - 1);
  while (total() > maxWidth) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++)
      if (
        (widths[i] as number) > (minimum[i] as number) &&
        (widest < 0 || (widths[i] as number) > (widths[widest] as number))
      )
        widest = i;
    if (widest < 0) break;
    widths[widest] = (widths[widest] as number) - 1;
  }
  return widths;
}

/** An aligned table for a terminal `maxWidth` wide (Infinity: `--wide`). `head` may be coloured. */
export function fitTable(
  head: string[],
  rows: Cell[][],
  maxWidth: number,
  style: (h: string) => string = (h) => h,
): string {
  const cells = rows.map((r) => head.map((_, i) => terminalCell(r[i] ?? null)));
  const natural = head.map((h, i) =>
    Math.max(displayWidth(h), ...cells.map((r) => displayWidth(r[i] as string))),
  );
  const minimum = natural.map((w) => Math.min(w, MIN_COLUMN));
  const widths = Number.isFinite(maxWidth) ? fitWidths(natural, minimum, maxWidth) : natural;
  const line = (r: string[], last: boolean) =>
    r
      .map((c, i) => {
        const cut = truncate(c, widths[i] as number);
        return i === r.length - 1 && last ? cut : pad(cut, widths[i] as number);
      })
      .join(' '.repeat(GAP))
      .trimEnd();
  const rule = widths.map((w) => '─'.repeat(w)).join(' '.repeat(GAP));
  return [style(line(head, true)), rule, ...cells.map((r) => line(r, true))].join('\n');
}

/** A grouped integer as callers format it for people (`1,227`): plain digits for a program. */
const GROUPED_INTEGER = /^-?\d{1,3}(?:,\d{3})+$/;

/** One value of piped text: in full, backslash, TAB, CR and newline escaped; grouped integers plain. */
export function pipedCell(cell: Cell): string {
  if (cell === null) return '';
  // Colour stays only when it was forced (FORCE_COLOR, --color): chalk writes none otherwise.
  const text = String(cell);
  if (GROUPED_INTEGER.test(stripAnsi(text))) return stripAnsi(text).replace(/,/g, '');
  // A backslash is doubled only where it would read as an escape: before a backslash, t, n, r or
  // the TAB, CR and newline that become `\t` `\r` `\n`. Class names stay as written (app\job\Send).
  return text
    .replace(/\\(?=[\\tnr\t\r\n])/g, '\\\\')
    .replace(/\t/g, '\\t')
    .replace(/\r/g, '\\r')
    .replace(/\n/g, '\\n');
}

/** Tab-separated text: a header line, then one line per row. */
export function pipedTable(head: string[], rows: Cell[][]): string {
  return [head, ...rows].map((r) => r.map(pipedCell).join('\t')).join('\n');
}
