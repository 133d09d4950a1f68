import type { LogicalStatus } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import { and, filterWhere, type Fragment, type ScanFilter } from '../fragment.js';
import { LIST_PAGE_KEY, type TaskSql } from '../task-sql.js';
import type { Db } from '../types.js';
import { aheadLimits } from './ahead-limits.js';
import { listAhead, prepareAhead, type AheadStart, type ForkableEncoder } from './list-ahead.js';
import type { ListReadOptions } from './list-read.js';
import { numericKey, pagePlans, type PageKey } from './page-plans.js';

export { primaryKeyWalk, type ListReadOptions } from './list-read.js';

export { filterWhere, windowField, type ScanFilter } from '../fragment.js';

export interface StatusCountRow {
  bizType: string | null;
  rawStatus: unknown;
  count: number;
}

/**
 * Counts rows by biz type and stored status in one pass.
 * In: filter. Out: one row per (biz type, status). Reads only; a full index or table scan.
 */
export async function countByBizTypeAndStatus(
  source: BoundSource,
  filter: ScanFilter,
): Promise<StatusCountRow[]> {
  const { sql } = source;
  const where = filterWhere(sql, filter);
  const status = sql.rawStatusExpr();
  const bizType = sql.bizTypeExpr();
  const rows = await source.db.query<{ bizType: unknown; rawStatus: unknown; n: unknown }>(
    `SELECT ${bizType} AS bizType, ${status} AS rawStatus, COUNT(*) AS n FROM ${sql.table} WHERE ${where.sql} GROUP BY ${bizType}, ${status}`,
    where.params,
  );
  return rows.map((r) => ({
    bizType: r.bizType === null ? null : String(r.bizType),
    rawStatus: r.rawStatus,
    count: Number(r.n),
  }));
}

export interface CountRow {
  bizType: string | null;
  count: number;
  /** The smallest time of the counted rows, epoch seconds (due: the oldest next_retry_time). */
  oldestEpoch: number | null;
}

/**
 * Due rows: pending with next_retry_time ≤ now, counted per biz type with the oldest due time.
 * In: filter, now (epoch, fixed once per run). Reads the (status, next_retry_time) index range.
 */
export async function countDue(
  source: BoundSource,
  filter: ScanFilter,
  nowEpoch: number,
): Promise<CountRow[]> {
  return countPerBizType(
    source,
    [dueWhere(source.sql, nowEpoch), filterWhere(source.sql, filter)],
    source.sql.epoch('nextRetryAt'),
  );
}

/**
 * Stuck rows: processing whose lease has expired, i.e. updated_at ≤ now − stuckAfter (or past
 * the row's own expiry, for profiles whose rows carry one).
 * In: filter, the stuck cutoff (epoch). Reads the processing rows of the status index.
 */
export async function countStuck(
  source: BoundSource,
  filter: ScanFilter,
  cutoffEpoch: number,
): Promise<CountRow[]> {
  return countPerBizType(
    source,
    [stuckWhere(source.sql, cutoffEpoch), filterWhere(source.sql, filter)],
    source.sql.stuckSince(),
  );
}

export function dueWhere(sql: TaskSql, nowEpoch: number): Fragment {
  return and([sql.statusIn(['pending']), sql.timeCompare('nextRetryAt', '<=', nowEpoch)]);
}

export function stuckWhere(sql: TaskSql, cutoffEpoch: number): Fragment {
  return and([sql.statusIn(['processing']), sql.stuckPast(cutoffEpoch)]);
}

/** Counts per biz type with the smallest `oldestEpoch` (an epoch-seconds expression) of each. */
async function countPerBizType(
  source: BoundSource,
  where: Fragment[],
  oldestEpoch: string | undefined,
): Promise<CountRow[]> {
  const { sql } = source;
  const w = and(where);
  const bizType = sql.bizTypeExpr();
  const oldest = oldestEpoch ?? 'NULL';
  const rows = await source.db.query<{ bizType: unknown; n: unknown; oldest: unknown }>(
    `SELECT ${bizType} AS bizType, COUNT(*) AS n, MIN(${oldest}) AS oldest FROM ${sql.table} WHERE ${w.sql} GROUP BY ${bizType}`,
    w.params,
  );
  return rows.map((r) => ({
    bizType: r.bizType === null ? null : String(r.bizType),
    count: Number(r.n),
    oldestEpoch: r.oldest === null ? null : Number(r.oldest),
  }));
}

export type ListKind = 'stuck' | 'due' | 'failed';

export const LIST_STATUS: Record<ListKind, LogicalStatus> = {
  stuck: 'processing',
  due: 'pending',
  failed: 'failed',
};

/**
 * Streams the rows of one list in index order (next_retry_time, id), a page at a time, with the
 * cutoff fixed once: each page starts where the last one ended, so the backlog is never re-read.
 * Rows come as arrays in TaskSql.listSelect() order (taskSelect()'s, then the page key), in
 * batches (one page is many batches).
 * `limit` 0 means every row.
 */
export async function* listBatches(
  source: BoundSource,
  base: Fragment,
  limit: number,
  pageSize: number,
  options: ListReadOptions = {},
): AsyncGenerator<unknown[][]> {
  const { sql } = source;
  const select = sql.listSelect();
  const from = `${sql.table}${options.tableHint ?? ''}`;
  let remaining = limit === 0 ? Number.POSITIVE_INFINITY : limit;
  for (const plan of pagePlans(source, base, options)) {
    let after: PageKey | undefined;
    while (remaining > 0) {
      const n = Math.min(pageSize, remaining);
      const w = plan.where(after);
      let got = 0;
      const batches = batchesOf(
        source.db,
        `SELECT ${select} FROM ${from} WHERE ${w.sql} ORDER BY ${plan.order} LIMIT ${n}`,
        w.params,
      );
      for await (const batch of batches) {
        if (batch.length === 0) continue;
        got += batch.length;
        remaining -= batch.length;
        const last = batch[batch.length - 1] as unknown[];
        after = { id: last[0], nextRetry: last[LIST_PAGE_KEY] };
        yield batch as unknown[][];
      }
      if (got < n) break; // a short page is the last one
    }
  }
}

/** Encodes rows straight from the wire; keeps count and the last row's page key (its columns 0 and LIST_PAGE_KEY). */
export interface ListEncoder extends ForkableEncoder {
  lastRowKey(): { id: string | null; nextRetry: string | null } | undefined;
}

/**
 * The rows of one list, as listBatches() reads them (same pages, same order, same cutoff), but
 * encoded from the wire by `encoder`: chunks of output bytes. Needs `db.streamEncoded` or `db.streamTextEncoded`.
 */
export async function* listEncoded(
  source: BoundSource,
  base: Fragment,
  limit: number,
  pageSize: number,
  encoder: ListEncoder,
  options: ListReadOptions = {},
): AsyncGenerator<Buffer> {
  const { sql, db } = source;
  const from = `${sql.table}${options.tableHint ?? ''}`;
  // Read through the primary key (ListReadOptions.tableHint): its pages ahead are ranges of it.
  const primaryWalk = options.tableHint !== undefined;
  // The lists read text, integer and JSON columns only (wireEncodable): the server's text of each value serves.
  const streamed = (db.streamEncoded ?? db.streamTextEncoded)?.bind(db);
  if (!streamed) throw new Error(`the connection to ${db.display} cannot stream encoded rows`);
  const select = sql.listSelect();
  let remaining = limit === 0 ? Number.POSITIVE_INFINITY : limit;
  // Read ahead where the engine gains by it, or where asked to (options.readAhead).
  const ahead =
    limit === 0 ? aheadLimits(options.readAhead, db.engine.listReadAhead, pageSize, primaryWalk) : undefined;
  for (const plan of pagePlans(source, base, options)) {
    let after: PageKey | undefined;
    // A whole list: its first page is read alone, the rest pages ahead (list-ahead.ts).
    let first = ahead;
    let preparing: Promise<AheadStart> | undefined;
    while (remaining > 0) {
      const n = Math.min(first ? first.firstRows : pageSize, remaining);
      const w = plan.where(after);
      const before = encoder.rows;
      const rows = streamed(
        `SELECT ${select} FROM ${from} WHERE ${w.sql} ORDER BY ${plan.order} LIMIT ${n}`,
        w.params,
        encoder,
      );
      for await (const chunk of rows) {
        // Half the first page out, the list is long enough to read ahead: what that needs is found
        // now, on other connections, so the pages ahead start as soon as the first page ends.
        if (first && !preparing && encoder.rows - before >= first.firstRows / 2) {
          preparing = prepareAhead(source, from, plan, first, primaryWalk);
          preparing.catch(() => undefined);
        }
        yield chunk;
      }
      const got = encoder.rows - before;
      remaining -= got;
      if (got < n) break; // a short page is the last one
      const key = encoder.lastRowKey();
      // Bound as the table compares them: a text id column's ids as text, even all digits.
      after = key && { id: sql.textId ? key.id : numericKey(key.id), nextRetry: numericKey(key.nextRetry) };
      if (first) {
        const prepared = await (preparing ?? prepareAhead(source, from, plan, first, primaryWalk));
        const rest = await listAhead(source, from, select, plan, encoder, streamed, after, first, prepared);
        first = undefined;
        if (rest) {
          yield* rest;
          break;
        }
      }
    }
  }
}

/** listBatches() one row at a time. */
export async function* listRows(
  source: BoundSource,
  base: Fragment,
  limit: number,
  pageSize: number,
  options: ListReadOptions = {},
): AsyncGenerator<unknown[]> {
  for await (const batch of listBatches(source, base, limit, pageSize, options)) yield* batch;
}

const FALLBACK_BATCH_ROWS = 1000;

/** A query's rows as arrays, in batches: the connection's own batching when it has one. */
function batchesOf(db: Db, statement: string, params: unknown[]): AsyncIterable<unknown[]> {
  if (db.streamBatches) return db.streamBatches(statement, params, { rowsAsArray: true });
  return (async function* () {
    let batch: unknown[] = [];
    for await (const row of db.stream(statement, params, { rowsAsArray: true })) {
      batch.push(row);
      if (batch.length >= FALLBACK_BATCH_ROWS) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  })();
}
