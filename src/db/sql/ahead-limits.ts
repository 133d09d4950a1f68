/**
 * How much a whole list is read ahead (list-ahead.ts): rows per page and of the first page, output
 * held per page, pages at once, how pages are cut; and the limits a list goes by.
 */

/**
 * Output a page read ahead may hold before its connection is paused (about a quarter of a page
 * of AHEAD_PAGE_ROWS NDJSON lines). Measured on 400,000 due rows of a 1M-row MariaDB table held
 * in memory, on 2 cores: 4 MB was as fast as 12 MB or faster (0.88× against 0.85× `mariadb
 * --quick`, median of 11 interleaved) for ~10 MB less peak RSS, and 2 MB as fast as 4 MB (1.17 s
 * against 1.21 s on Node 20, 1.06 s against 1.07 s on Node 24, medians of 9) for another 4–8 MB
 * less (Node 24: 128–136 MB against 134–143 MB).
 */
export const AHEAD_BYTES = 2 * 1024 * 1024;

/**
 * Rows per page read ahead (where pages are cut by value, about as many). A page's lines (~7 MB
 * of NDJSON at this size) outgrow AHEAD_BYTES: its statement is held open, paused, until the page
 * before it is out, and then streams on.
 */
export const AHEAD_PAGE_ROWS = 20_000;

/**
 * Rows of a whole list's first page, read alone before any page ahead starts: the list's first
 * lines come without waiting for any bound, and where pages are cut by value (page-cuts.ts) its
 * keys' density sizes the first pages after it. The shorter it is, the sooner the server works on
 * several pages: on 400,000 due rows of a 1M-row MariaDB table held in memory, on 2 cores, 5,000
 * rows took 1.20 s against 1.26 s for 20,000 (medians of 11 interleaved; `mariadb --quick`
 * 1.12–1.13 s in the same runs).
 */
export const AHEAD_FIRST_ROWS = 5_000;

/**
 * Pages read ahead of the one streaming out. With one, a page read whole while the page before it
 * streamed out is written in a moment, and the page after it has only just started: the server
 * works on one page about half the time. With two, the page after has been reading all along.
 * Measured on 400,000 due rows of a 1M-row MariaDB table on 2 cores (see bench/RESULTS.md).
 */
export const AHEAD_PAGES = 2;

/**
 * Pages read ahead of the one streaming out on a walk of the primary key. The server reads a range
 * of ids faster than the client encodes it, and each page streaming at once keeps its socket reads
 * until the next scavenge: on 400,000 due rows of a 1M-row table larger than the buffer pool, two
 * ahead peaked at 151 MB of RSS on Node 24, one at 124–129 MB; interleaved, one ahead took 1.22 s
 * against 1.13 s with two, and 1.34 s against 1.54 s page after page.
 */
export const AHEAD_PRIMARY_PAGES = 1;

/**
 * How pages read ahead are cut: by the value of the order's leading key where it is a number
 * ('value', the default), or always at every AHEAD_PAGE_ROWS-th row ('count').
 */
export type AheadCut = 'value' | 'count';

/**
 * How a whole list is read ahead: rows per page and of the first page (read alone), output bytes
 * a page read ahead holds before its connection is paused, pages read ahead at once, how pages are cut.
 */
export interface AheadOptions {
  pageRows?: number;
  firstRows?: number;
  bytes?: number;
  pages?: number;
  cut?: AheadCut;
}

/**
 * What a list read ahead goes by: rows per page and of the first page (read alone), output bytes a
 * page read ahead may hold, pages ahead, how pages are cut.
 */
export interface AheadLimits {
  rows: number;
  firstRows: number;
  bytes: number;
  pages: number;
  cut: AheadCut;
}

/**
 * The limits a whole list is read ahead with, or undefined to read it page after page: asked for
 * (`options`), else as the engine gains by it (`byDefault`: Engine.listReadAhead). Pages are never
 * larger than `pageSize`; a walk of the primary key (`primaryWalk`) reads AHEAD_PRIMARY_PAGES ahead
 * unless asked otherwise.
 */
export function aheadLimits(
  options: AheadOptions | false | undefined,
  byDefault: boolean,
  pageSize: number,
  primaryWalk = false,
): AheadLimits | undefined {
  if (options === false || (options === undefined && !byDefault)) return undefined;
  const rows = Math.min(pageSize, options?.pageRows ?? AHEAD_PAGE_ROWS);
  return {
    rows,
    firstRows: Math.min(rows, options?.firstRows ?? AHEAD_FIRST_ROWS),
    bytes: options?.bytes ?? AHEAD_BYTES,
    pages: Math.max(1, options?.pages ?? (primaryWalk ? AHEAD_PRIMARY_PAGES : AHEAD_PAGES)),
    cut: options?.cut ?? 'value',
  };
}
