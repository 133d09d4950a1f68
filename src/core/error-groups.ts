/** Failed tasks grouped by what went wrong: the last error with its ids, numbers and keys taken out. */

/** An error with what varies from task to task replaced, for grouping. */
export interface ErrorGroup {
  /** The normalised first line: `#` for long numbers, `<uuid>`, `<hex>`; `(no error text)` when none. */
  pattern: string;
  /** The longest literal piece of the pattern: text every error of the group contains (an error filter). */
  contains: string;
  count: number;
  /** One error of the group as it was written. */
  example: string | null;
}

/** How long a pattern may be (the first line, cut). */
const PATTERN_CHARS = 160;
const NO_TEXT = '(no error text)';

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const HEX = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b/gi;
/** Four digits or more (ids, amounts, durations); short numbers such as HTTP statuses stay. */
const LONG_NUMBER = /\d{4,}(?:\.\d+)?/g;
/** Quoted values: keys, names, ids in quotes. */
const QUOTED = /'[^']{1,80}'|"[^"]{1,80}"/g;

/** The group an error belongs to. */
export function normaliseError(error: string | null): string {
  const first = (error ?? '').split('\n')[0]?.trim() ?? '';
  if (first === '') return NO_TEXT;
  const pattern = first
    .replace(UUID, '<uuid>')
    .replace(HEX, '<hex>')
    .replace(QUOTED, "'…'")
    .replace(LONG_NUMBER, '#')
    .replace(/\s+/g, ' ');
  return pattern.length > PATTERN_CHARS ? `${pattern.slice(0, PATTERN_CHARS - 1)}…` : pattern;
}

/** The longest piece of a pattern that is literal error text. */
function literalOf(pattern: string): string {
  if (pattern === NO_TEXT) return '';
  const pieces = pattern.split(/<uuid>|<hex>|'…'|#|…/).map((p) => p.trim());
  return pieces.reduce((best, p) => (p.length > best.length ? p : best), '');
}

/** Distinct errors and their counts merged into groups, the largest first (ties by pattern). */
export function groupErrors(counts: ReadonlyArray<{ error: string | null; count: number }>): ErrorGroup[] {
  const groups = new Map<string, ErrorGroup>();
  for (const { error, count } of counts) {
    const pattern = normaliseError(error);
    const group = groups.get(pattern);
    if (group) group.count += count;
    else groups.set(pattern, { pattern, contains: literalOf(pattern), count, example: error });
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || a.pattern.localeCompare(b.pattern));
}
