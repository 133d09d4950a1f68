import type { LogicalStatus } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import type { Fragment, TaskSql } from '../task-sql.js';
import type { Db } from '../types.js';

/** Which rows a scan looks at: biz types and a created-at window (epoch seconds). */
export interface ScanFilter {
  bizTypes?: string[];
  sinceEpoch?: number;
  untilEpoch?: number;
}

/** The time field --since/--until apply to: createdAt, or updatedAt (failed_at) for tables without one. */
export function windowField(sql: TaskSql): 'createdAt' | 'updatedAt' | undefined {
  if (sql.has('createdAt')) return 'createdAt';
  if (sql.has('updatedAt')) return 'updatedAt';
  return undefined;
}

/** The filter as AND-ed predicates (always at least `1=1`). */
export function filterWhere(sql: TaskSql, filter: ScanFilter): Fragment {
  const parts: Fragment[] = [];
  if (filter.bizTypes?.length) {
    const col = sql.expr('bizType') as string;
    parts.push({ sql: `${col} IN (${filter.bizTypes.map(() => '?').join(', ')})`, params: filter.bizTypes });
  }
  const field = windowField(sql);
  if (field && filter.sinceEpoch !== undefined) parts.push(sql.timeCompare(field, '>=', filter.sinceEpoch));
  if (field && filter.untilEpoch !== undefined) parts.push(sql.timeCompare(field, '<', filter.untilEpoch));
  return and(parts);
}

export function and(parts: Fragment[]): Fragment {
  const kept = parts.filter((p) => p.sql !== '1=1');
  if (kept.length === 0) return { sql: '1=1', params: [] };
  return { sql: kept.map((p) => `(${p.sql})`).join(' AND '), params: kept.flatMap((p) => p.params) };
}

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
  const bizType = sql.expr('bizType') ?? 'NULL';
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
    'nextRetryAt',
  );
}

/**
 * Stuck rows: processing whose lease has expired, i.e. updated_at ≤ now − stuckAfter.
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
    'updatedAt',
  );
}

export function dueWhere(sql: TaskSql, nowEpoch: number): Fragment {
  return and([sql.statusIn(['pending']), sql.timeCompare('nextRetryAt', '<=', nowEpoch)]);
}

export function stuckWhere(sql: TaskSql, cutoffEpoch: number): Fragment {
  return and([sql.statusIn(['processing']), sql.timeCompare('updatedAt', '<=', cutoffEpoch)]);
}

async function countPerBizType(
  source: BoundSource,
  where: Fragment[],
  oldestOf: 'nextRetryAt' | 'updatedAt',
): Promise<CountRow[]> {
  const { sql } = source;
  const w = and(where);
  const bizType = sql.expr('bizType') ?? 'NULL';
  const oldest = sql.epoch(oldestOf) ?? 'NULL';
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
 * Rows come as arrays in TaskSql.taskSelect() order, in batches (one page is many batches).
 * `limit` 0 means every row.
 */
export async function* listBatches(
  source: BoundSource,
  base: Fragment,
  limit: number,
  pageSize: number,
  options: { nullNextRetry?: boolean } = {},
): AsyncGenerator<unknown[][]> {
  const { sql } = source;
  const id = sql.expr('id') as string;
  const nrt = sql.expr('nextRetryAt');
  const select = sql.taskSelect();
  const none: Fragment = { sql: '1=1', params: [] };
  let remaining = limit === 0 ? Number.POSITIVE_INFINITY : limit;

  async function* pages(
    where: (after: unknown[] | undefined) => Fragment,
    order: string,
  ): AsyncGenerator<unknown[][]> {
    let after: unknown[] | undefined;
    while (remaining > 0) {
      const n = Math.min(pageSize, remaining);
      const w = where(after);
      let got = 0;
      const batches = batchesOf(
        source.db,
        `SELECT ${select} FROM ${sql.table} WHERE ${w.sql} ORDER BY ${order} LIMIT ${n}`,
        w.params,
      );
      for await (const batch of batches) {
        if (batch.length === 0) continue;
        got += batch.length;
        remaining -= batch.length;
        after = batch[batch.length - 1] as unknown[];
        yield batch as unknown[][];
      }
      if (got < n) return; // a short page is the last one
    }
  }

  if (!nrt) {
    yield* pages((after) => and([base, after ? { sql: `${id} > ?`, params: [after[0]] } : none]), id);
    return;
  }
  if (options.nullNextRetry !== false) {
    // Rows with no next_retry_time come first, by id.
    yield* pages(
      (after) =>
        and([
          base,
          { sql: `${nrt} IS NULL`, params: [] },
          after ? { sql: `${id} > ?`, params: [after[0]] } : none,
        ]),
      id,
    );
  }
  const param = source.db.dialect.epochParam(sql.timeTypes.nextRetryAt ?? 'datetime');
  yield* pages(
    (after) =>
      and([
        base,
        { sql: `${nrt} IS NOT NULL`, params: [] },
        after
          ? {
              sql: `${nrt} > ${param} OR (${nrt} = ${param} AND ${id} > ?)`,
              params: [after[6], after[6], after[0]],
            }
          : none,
      ]),
    `${nrt}, ${id}`,
  );
}

/** listBatches() one row at a time. */
export async function* listRows(
  source: BoundSource,
  base: Fragment,
  limit: number,
  pageSize: number,
  options: { nullNextRetry?: boolean } = {},
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
