import type { BoundSource } from '../bind-source.js';
import type { RowEncoder } from '../types.js';
import type { AheadLimits } from './ahead-limits.js';
import { ValueCuts } from './page-cuts.js';
import { keyStatement, readKey, type PageKey, type PagePlan } from './page-plans.js';

/**
 * Reading a whole list pages ahead. On a server that reads a large list slower than the client
 * prints it (rows fetched through a secondary index, a table larger than the buffer pool), the
 * next pages are read on other pooled connections while the current one streams out, each one's
 * output held up to AHEAD_BYTES; so the server works on several pages at once and the list comes
 * out in the same order, line for line, as page after page would give it. The first page
 * (AHEAD_FIRST_ROWS rows) is read alone, so the first lines come without waiting for a page bound;
 * once half of it is out, what the pages ahead need is found on other connections
 * (prepareAhead()), so they start as soon as it ends.
 * Engines whose client is the slower side (`Engine.listReadAhead` false: PostgreSQL's COPY, where
 * a second stream only competes for the client's CPU) read page after page.
 *
 * Pages are bounded on both sides by keys found before they start, so they never overlap,
 * whatever is written meanwhile (a row whose key changes between two pages is missed or listed
 * twice, as with page after page): cut by the value of the order's leading key where it is a
 * number (page-cuts.ts: two index dives for the whole list), else at the key of every
 * AHEAD_PAGE_ROWS-th row, read from the index alone (`LIMIT 1 OFFSET rows - 1`), the next page
 * starting strictly after it. Either way the bounds must be readable from the index alone, or the
 * list is read page after page — but for a walk of the primary key cut by value: each of its pages
 * is a range of the primary key (`id > ? AND id <= ?`) whatever its WHERE reads, and its bounds are
 * the two dives, which stop at the first row the WHERE takes from either end (the walk is taken
 * for a list that is a large share of its table, or where the server walks the whole table anyway;
 * at worst the dives read it once more, on other connections). Where its keys are not numbers it
 * is read page after page: a bound counted along the primary key would read each page twice.
 */

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

/** Whether finding page boundaries reads the index alone, in order (else reading ahead would read each page twice). */
async function boundariesFromIndex(
  source: BoundSource,
  from: string,
  plan: PagePlan,
  after: PageKey | undefined,
  pageSize: number,
): Promise<boolean> {
  const { db } = source;
  const statement = keyStatement(from, plan, after, pageSize - 1);
  return db.engine.indexOnly(await db.query(`${db.dialect.explain} ${statement.sql}`, statement.params));
}

/**
 * What reading a list ahead needs before its pages ahead start: whether bounds counted along the
 * index can be read from it alone, and the cuts by value where its keys are numbers. A list with
 * neither is read page after page.
 */
export interface AheadStart {
  fromIndex: boolean;
  cuts: ValueCuts | undefined;
}

/**
 * Finds what reading `plan`'s list ahead needs (AheadStart) while the list's first page still
 * streams, on connections of its own (which the pages ahead then stream on): whether the bounds
 * come from the index alone, then, if they do, the list's first and last keys at once. A walk of
 * the primary key (`primaryWalk`) cut by value needs the keys alone (see the top of this file).
 */
export async function prepareAhead(
  source: BoundSource,
  from: string,
  plan: PagePlan,
  { rows, cut }: AheadLimits,
  primaryWalk = false,
): Promise<AheadStart> {
  if (primaryWalk && cut === 'value')
    return { fromIndex: false, cuts: await ValueCuts.open(source, from, plan, rows) };
  if (!(await boundariesFromIndex(source, from, plan, undefined, rows)))
    return { fromIndex: false, cuts: undefined };
  return {
    fromIndex: true,
    cuts: cut === 'value' ? await ValueCuts.open(source, from, plan, rows) : undefined,
  };
}

/** A page, with the keys it starts after and ends at (undefined: it is the last). */
interface Ahead {
  stream: PageStream;
  after: PageKey | undefined;
  upTo: PageKey | undefined;
}

/**
 * Every row of one page plan after `start` (where its first page ended), read pages ahead (see
 * the top of this file), with what prepareAhead() found; undefined when the pages can neither be
 * cut by value nor bounded from an index alone (the caller reads page after page).
 */
export async function listAhead(
  source: BoundSource,
  from: string,
  select: string,
  plan: PagePlan,
  encoder: ForkableEncoder,
  streamed: Streamed,
  start: PageKey | undefined,
  { rows, firstRows, bytes, pages }: AheadLimits,
  prepared: AheadStart,
): Promise<AsyncGenerator<Buffer> | undefined> {
  const cuts = start && prepared.cuts?.firstPageEnded(start, firstRows) ? prepared.cuts : undefined;
  // Without cuts by value the bounds are counted, which only the index alone may answer.
  if (!cuts && !prepared.fromIndex) return undefined;
  const boundary = (after: PageKey | undefined) =>
    // Cut by count: the key of the `rows`-th row after `after` (undefined: the page from it is the last).
    cuts && after
      ? Promise.resolve(cuts.upTo(after))
      : readKey(source, keyStatement(from, plan, after, rows - 1));
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
      const upTo = await boundary(key);
      if (leaving) return undefined;
      const stream = page(key, upTo);
      stream.fill(bytes);
      return { stream, after: key, upTo };
    });
  return (async function* () {
    const upTo = await boundary(start);
    let current: Ahead | undefined = { stream: page(start, upTo), after: start, upTo };
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
        const { stream } = current;
        yield* stream.pageRows();
        if (cuts && current.after && current.upTo)
          cuts.readOut(current.after, current.upTo, stream.encoder.rows);
        encoder.absorb(stream.encoder);
        current = await ahead.shift();
        if (!current) return;
      }
    } finally {
      leaving = true;
      await current?.stream.close();
      for (const next of ahead) await (await next.catch(() => undefined))?.stream.close();
    }
  })();
}
