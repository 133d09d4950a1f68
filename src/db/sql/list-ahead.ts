import type { BoundSource } from '../bind-source.js';
import type { RowEncoder } from '../types.js';
import type { PageKey, PagePlan } from './page-plans.js';

/**
 * Reading a whole list pages ahead. On a server that reads a large list slower than the client
 * prints it (rows fetched through a secondary index, a table larger than the buffer pool), the
 * next pages are read on other pooled connections while the current one streams out, each one's
 * output held up to AHEAD_BYTES; so the server works on several pages at once and the list comes
 * out in the same order, line for line, as page after page would give it. The first page
 * (AHEAD_PAGE_ROWS rows) is read alone, so the first lines come without waiting for a page bound.
 * Engines whose client is the slower side (`Engine.listReadAhead` false: PostgreSQL's COPY, where
 * a second stream only competes for the client's CPU) read page after page.
 *
 * Pages are bounded on both sides by keys found beforehand: each page ends at the key of its
 * AHEAD_PAGE_ROWS-th row, read from the index alone (`LIMIT 1 OFFSET rows - 1`), and the next starts
 * strictly after it. So pages never overlap, whatever is written meanwhile (a row whose key changes
 * between two pages is missed or listed twice, as with page after page).
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
 * Rows per page read ahead (the first page, read alone, too). A page's lines (~7 MB of NDJSON at
 * this size) outgrow AHEAD_BYTES: its statement is held open, paused, until the page before it is
 * out, and then streams on.
 */
export const AHEAD_PAGE_ROWS = 20_000;

/**
 * Pages read ahead of the one streaming out. With one, a page read whole while the page before it
 * streamed out is written in a moment, and the page after it has only just started: the server
 * works on one page about half the time. With two, the page after has been reading all along.
 * Measured on 400,000 due rows of a 1M-row MariaDB table on 2 cores (see bench/RESULTS.md).
 */
export const AHEAD_PAGES = 2;

/**
 * How a whole list is read ahead: rows per page (the first page, read alone, too), output bytes
 * a page read ahead holds before its connection is paused, pages read ahead at once.
 */
export interface AheadOptions {
  pageRows?: number;
  bytes?: number;
  pages?: number;
}

/** What a list read ahead goes by: rows per page, output bytes a page read ahead may hold, pages ahead. */
export interface AheadLimits {
  rows: number;
  bytes: number;
  pages: number;
}

/**
 * The limits a whole list is read ahead with, or undefined to read it page after page: asked for
 * (`options`), else as the engine gains by it (`byDefault`: Engine.listReadAhead). Pages are never
 * larger than `pageSize`.
 */
export function aheadLimits(
  options: AheadOptions | false | undefined,
  byDefault: boolean,
  pageSize: number,
): AheadLimits | undefined {
  if (options === false || (options === undefined && !byDefault)) return undefined;
  return {
    rows: Math.min(pageSize, options?.pageRows ?? AHEAD_PAGE_ROWS),
    bytes: options?.bytes ?? AHEAD_BYTES,
    pages: Math.max(1, options?.pages ?? AHEAD_PAGES),
  };
}

/** A list encoder whose rows can be encoded apart and counted back in (NdjsonWireEncoder). */
export interface ForkableEncoder extends RowEncoder {
  readonly rows: number;
  /** A new encoder writing the same lines, sharing this one's spare chunks. */
  fork(): ForkableEncoder;
  /** Counts a fork's rows as this encoder's own once its lines are out. */
  absorb(fork: ForkableEncoder): void;
}

type Streamed = (sql: string, params: readonly unknown[], encoder: RowEncoder) => AsyncIterable<Buffer>;

/** One page's stream: filled ahead into memory up to a bound, then drained in order. */
class PageStream {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private filling: Promise<void> | undefined;
  private done = false;
  private failure: unknown;
  private readonly it: AsyncIterator<Buffer>;

  constructor(
    rows: AsyncIterable<Buffer>,
    readonly encoder: ForkableEncoder,
  ) {
    this.it = rows[Symbol.asyncIterator]();
  }

  /** Starts reading now, holding up to `cap` bytes of output. */
  fill(cap: number): void {
    this.filling = this.readAhead(cap);
  }

  private async readAhead(cap: number): Promise<void> {
    try {
      while (this.bytes < cap) {
        const next = await this.it.next();
        if (next.done) {
          this.done = true;
          return;
        }
        this.chunks.push(next.value);
        this.bytes += next.value.length;
      }
    } catch (error) {
      this.failure = error;
      this.done = true;
    }
  }

  /** What was held, then the rest as it comes. */
  async *pageRows(): AsyncGenerator<Buffer> {
    await this.filling;
    for (let chunk = this.chunks.shift(); chunk; chunk = this.chunks.shift()) yield chunk;
    if (this.failure !== undefined) throw this.failure;
    if (this.done) return;
    for (;;) {
      const next = await this.it.next();
      if (next.done) return;
      yield next.value;
    }
  }

  /** Ends the page's statement early (its connection is dropped, not reused). */
  async close(): Promise<void> {
    await this.filling;
    await this.it.return?.();
  }
}

/** The statement that reads the key of the `rows`-th row after `after` (the one EXPLAINed, too). */
function boundaryStatement(from: string, plan: PagePlan, after: PageKey | undefined, rows: number) {
  const w = plan.where(after);
  return {
    sql: `SELECT ${plan.key.id} AS id, ${plan.key.nextRetry ?? 'NULL'} AS k FROM ${from} WHERE ${w.sql} ORDER BY ${plan.order} LIMIT 1 OFFSET ${rows - 1}`,
    params: w.params,
  };
}

/**
 * The key of the `pageSize`-th row after `after`, or undefined when fewer rows are left (the page
 * from `after` is the last).
 */
async function pageBoundary(
  source: BoundSource,
  from: string,
  plan: PagePlan,
  after: PageKey | undefined,
  pageSize: number,
): Promise<PageKey | undefined> {
  const statement = boundaryStatement(from, plan, after, pageSize);
  const rows = await source.db.query<{ id: unknown; k: unknown }>(statement.sql, statement.params);
  const row = rows[0];
  return row && { id: row.id, nextRetry: row.k };
}

/** Whether finding page boundaries reads the index alone, in order (else reading ahead would read each page twice). */
async function boundariesFromIndex(
  source: BoundSource,
  from: string,
  plan: PagePlan,
  after: PageKey | undefined,
  pageSize: number,
): Promise<boolean> {
  const { db } = source;
  const statement = boundaryStatement(from, plan, after, pageSize);
  return db.engine.indexOnly(await db.query(`${db.dialect.explain} ${statement.sql}`, statement.params));
}

/** A page read ahead, with the key it ends at (undefined: it is the last). */
interface Ahead {
  stream: PageStream;
  upTo: PageKey | undefined;
}

/**
 * Every row of one page plan, read pages ahead (see the top of this file); undefined when the
 * page boundaries cannot be read from an index alone (the caller reads page after page).
 */
export async function listAhead(
  source: BoundSource,
  from: string,
  select: string,
  plan: PagePlan,
  encoder: ForkableEncoder,
  streamed: Streamed,
  start: PageKey | undefined,
  { rows, bytes, pages }: AheadLimits,
): Promise<AsyncGenerator<Buffer> | undefined> {
  if (!(await boundariesFromIndex(source, from, plan, start, rows))) return undefined;
  const page = (after: PageKey | undefined, upTo: PageKey | undefined) => {
    const w = plan.where(after, upTo);
    const fork = encoder.fork();
    return new PageStream(
      streamed(`SELECT ${select} FROM ${from} WHERE ${w.sql} ORDER BY ${plan.order}`, w.params, fork),
      fork,
    );
  };
  // Set once the list is left (read out, failed or closed early): no page starts after that.
  let leaving = false;
  // The page after `before` (once its bound is known): its own bound read, then its rows read
  // ahead; undefined past the last page.
  const after = (before: Promise<{ upTo: PageKey | undefined } | undefined>) =>
    before.then(async (previous) => {
      const key = previous?.upTo;
      if (!key || leaving) return undefined;
      const upTo = await pageBoundary(source, from, plan, key, rows);
      if (leaving) return undefined;
      const stream = page(key, upTo);
      stream.fill(bytes);
      return { stream, upTo };
    });
  return (async function* () {
    const upTo = await pageBoundary(source, from, plan, start, rows);
    let current: PageStream | undefined = page(start, upTo);
    let last: Promise<{ upTo: PageKey | undefined } | undefined> = Promise.resolve({ upTo });
    const ahead: Array<Promise<Ahead | undefined>> = [];
    try {
      for (;;) {
        while (ahead.length < pages) {
          const next = after(last);
          // Settled later (read out or closed); until then a failure must not count as unhandled.
          next.catch(() => undefined);
          ahead.push(next);
          last = next;
        }
        yield* current.pageRows();
        encoder.absorb(current.encoder);
        current = undefined;
        const next = await ahead.shift();
        if (!next) return;
        current = next.stream;
      }
    } finally {
      leaving = true;
      await current?.close();
      for (const next of ahead) await (await next.catch(() => undefined))?.stream.close();
    }
  })();
}
