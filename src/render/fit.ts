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
  const total = () => tableSpan(widths);
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

const tableSpan = (widths: readonly number[]) =>
  widths.reduce((a, b) => a + b, 0) + GAP * Math.max(0, widths.length - 1);

/**
 * A column of a table. `fit: 'cut'` is free text (an error, a reason), shortened with `…` to fit;
 * `fit: 'whole'` is a value that means nothing cut (an id, a time, a count, a name), never cut.
 * Without `fit`, a column is whole when every value is short (a status, a name: at most
 * TEXT_FLOOR cells) or is a number, a duration or a time; a column holding longer text is cut. `drop` makes a column of little value on a narrow terminal: when the table does not fit
 * otherwise, such columns are left out, the lowest `drop` first, and a line under the table names them.
 */
export interface Column {
  title: string;
  fit?: 'cut' | 'whole';
  drop?: number;
}
export type Head = string | Column;

/** Free text keeps at least this many cells before a low-value column is left out for it. */
const TEXT_FLOOR = 20;
const WHOLE_SHAPE =
  /^(?:-?[\d,]+(?:\.\d+)?%?|n\/a|—|-|\d+(?:ms|[smhd])(?:\d+[smh])?|\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?Z?)$/;

function columnOf(head: Head, cells: string[]): Required<Column> {
  const column = typeof head === 'string' ? { title: head } : head;
  const fit =
    column.fit ??
    (cells.every((c) => displayWidth(c) <= TEXT_FLOOR || WHOLE_SHAPE.test(stripAnsi(c).trim()))
      ? 'whole'
      : 'cut');
  return { title: column.title, fit, drop: column.drop ?? Number.POSITIVE_INFINITY };
}

/** A heading in lines of at most `width` cells, broken between words (a word longer than that is cut). */
function stackHeading(title: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of title.split(' ')) {
    const last = lines[lines.length - 1];
    if (last !== undefined && displayWidth(`${last} ${word}`) <= width)
      lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines.map((l) => truncate(l, width));
}

const longestWord = (title: string) => Math.max(...title.split(' ').map(displayWidth));

interface Layout {
  shown: number[];
  widths: number[];
  stacked: boolean;
}

/**
 * How a table fits `maxWidth`: headings on one line if it fits so, else stacked on two or more
 * (a heading is never cut); free text cut down to TEXT_FLOOR; then low-value columns left out;
 * then free text cut further. Ids, times and counts are never cut: a table of them alone that is
 * still too wide is left as wide as it is.
 */
function layout(columns: Required<Column>[], cellWidths: number[], maxWidth: number): Layout {
  const all = columns.map((_, i) => i);
  const headWidth = (i: number, stacked: boolean) =>
    stacked ? longestWord(columns[i]?.title ?? '') : displayWidth(columns[i]?.title ?? '');
  const natural = (i: number, stacked: boolean) => Math.max(cellWidths[i] as number, headWidth(i, stacked));
  const oneLine = all.map((i) => natural(i, false));
  if (tableSpan(oneLine) <= maxWidth) return { shown: all, widths: oneLine, stacked: false };
  let shown = all;
  const attempt = (floorOfText: number): number[] => {
    const want = shown.map((i) => natural(i, true));
    const floor = shown.map((i, k) =>
      columns[i]?.fit === 'cut' ? Math.min(want[k] as number, floorOfText) : (want[k] as number),
    );
    return fitWidths(want, floor, maxWidth);
  };
  for (;;) {
    const widths = attempt(TEXT_FLOOR);
    if (tableSpan(widths) <= maxWidth) return { shown, widths, stacked: true };
    const droppable = shown.filter((i) => Number.isFinite(columns[i]?.drop));
    if (droppable.length === 0) break;
    const first = droppable.reduce((a, b) => ((columns[b]?.drop ?? 0) < (columns[a]?.drop ?? 0) ? b : a));
    shown = shown.filter((i) => i !== first);
  }
  return { shown, widths: attempt(MIN_COLUMN), stacked: true };
}

/** An aligned table for a terminal `maxWidth` wide (Infinity: `--wide`). `head` may be coloured. */
export function fitTable(
  head: Head[],
  rows: Cell[][],
  maxWidth: number,
  style: (h: string) => string = (h) => h,
): string {
  const cells = rows.map((r) => head.map((_, i) => terminalCell(r[i] ?? null)));
  const columns = head.map((h, i) =>
    columnOf(
      h,
      cells.map((r) => r[i] as string),
    ),
  );
  const cellWidths = columns.map((_, i) => Math.max(0, ...cells.map((r) => displayWidth(r[i] as string))));
  const { shown, widths, stacked } = layout(
    columns,
    cellWidths,
    Number.isFinite(maxWidth) ? maxWidth : Number.MAX_SAFE_INTEGER,
  );
  const line = (r: string[]) =>
    shown
      .map((c, k) => {
        const cut = truncate(r[c] as string, widths[k] as number);
        return k === shown.length - 1 ? cut : pad(cut, widths[k] as number);
      })
      .join(' '.repeat(GAP))
      .trimEnd();
  const headings = shown.map((c, k) =>
    stacked ? stackHeading(columns[c]?.title ?? '', widths[k] as number) : [columns[c]?.title ?? ''],
  );
  const headLines = Math.max(...headings.map((h) => h.length));
  const headRows = Array.from({ length: headLines }, (_, l) => {
    const r: string[] = [];
    shown.forEach((c, k) => (r[c] = headings[k]?.[l] ?? ''));
    return style(line(r));
  });
  const rule = widths.map((w) => '─'.repeat(w)).join(' '.repeat(GAP));
  const left = columns.filter((_, i) => !shown.includes(i)).map((c) => c.title);
  const note = left.length
    ? [`(left out to fit ${maxWidth} columns: ${left.join(', ')}; --wide shows them)`]
    : [];
  return [...headRows, rule, ...cells.map(line), ...note].join('\n');
}

/**
 * Text broken between words into lines of at most `width` display cells (a word longer than that
 * keeps a line of its own, whole: an index name or a URL means nothing cut). Runs of spaces inside
 * a line are kept; the breaks replace single spaces.
 */
export function wrapWords(text: string, width: number): string[] {
  if (!Number.isFinite(width) || displayWidth(text) <= width) return [text];
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const next = line === '' ? word : `${line} ${word}`;
    if (line !== '' && displayWidth(next) > width) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  lines.push(line);
  return lines;
}

/**
 * `prefix` then `text` wrapped to `width`, each further line indented by `indent` cells (by default
 * to where the text began). A prefix too long to leave room on its line moves the text to the next.
 */
export function hangingIndent(
  prefix: string,
  text: string,
  width: number,
  indent: number = displayWidth(prefix),
): string {
  if (!Number.isFinite(width) || displayWidth(prefix + text) <= width) return prefix + text;
  const pad = ' '.repeat(indent);
  const rest = Math.max(20, width - indent);
  const firstRoom = width - displayWidth(prefix);
  const [first = '', ...others] = wrapWords(text, firstRoom);
  const head = firstRoom >= 20 && displayWidth(first) <= firstRoom ? prefix + first : prefix.trimEnd();
  const tail = head === prefix + first ? others.join(' ') : text;
  const lines = tail === '' ? [] : wrapWords(tail, rest);
  return [head, ...lines.map((l) => pad + l)].join('\n');
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
