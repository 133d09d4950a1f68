import {
  LATENCY_PERCENTILE,
  type FailureSample,
  type NowRow,
  type QueueReport,
  type WindowRow,
} from '../../core/report.js';
import type { BoundSource } from '../bind-source.js';
import { and, type Fragment } from '../fragment.js';
import { HISTOGRAM_SCALE } from '../../core/shards.js';
import { toIso, toText } from '../task-sql.js';
import { filterWhere, type ScanFilter } from './scan.js';

/**
 * The report's statements. Everything is aggregated in the database: the window's rows are never
 * loaded into memory. Percentiles use window functions (MariaDB ≥ 10.2, MySQL 8, SQLite ≥ 3.25).
 */

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/** `rn` is the nearest-rank p-th percentile among `n` values: rn ≥ p·n/100 > rn − 1, in integer arithmetic. */
function isRank(rn: string, n: string): string {
  const p = Math.trunc(LATENCY_PERCENTILE);
  return `${rn} * 100 >= ${p} * ${n} AND (${rn} - 1) * 100 < ${p} * ${n}`;
}

/**
 * The window aggregate, in one pass over the tasks created in the window: per biz type, created,
 * succeeded, failed, the sum and count of latencies (updated − created of successes), and the p95
 * latency per biz type and overall (the overall one comes back on the row of the biz type it falls in).
 * In: filter with sinceEpoch/untilEpoch on created_at; `latency` false when updated_at is missing.
 * Out: one row per biz type. Reads only; one scan of the window (an index on created_at makes it a range).
 */
export async function windowAggregate(
  source: BoundSource,
  filter: ScanFilter,
  latency: boolean,
): Promise<WindowRow[]> {
  const { sql } = source;
  const where = filterWhere(sql, filter);
  const bizType = sql.bizTypeExpr();
  const success = sql.statusIn(['success']);
  const failed = sql.statusIn(['failed']);
  const lat = latency
    ? `CASE WHEN ${success.sql} THEN ${sql.epoch('updatedAt')} - ${sql.epoch('createdAt')} END`
    : 'NULL';
  const latParams = latency ? success.params : [];
  const statement = `
SELECT bt, COUNT(*) AS created, SUM(ok) AS succeeded, SUM(ko) AS failed, SUM(lat) AS latSum, COUNT(lat) AS latN,
       MIN(CASE WHEN lat IS NOT NULL AND ${isRank('rnBiz', 'nBiz')} THEN lat END) AS p95,
       MIN(CASE WHEN lat IS NOT NULL AND ${isRank('rnAll', 'nAll')} THEN lat END) AS p95All
  FROM (
    SELECT bt, ok, ko, lat,
           ROW_NUMBER() OVER (PARTITION BY bt, CASE WHEN lat IS NULL THEN 1 ELSE 0 END ORDER BY lat) AS rnBiz,
           COUNT(lat) OVER (PARTITION BY bt) AS nBiz,
           ROW_NUMBER() OVER (PARTITION BY CASE WHEN lat IS NULL THEN 1 ELSE 0 END ORDER BY lat) AS rnAll,
           COUNT(lat) OVER () AS nAll
      FROM (
        SELECT ${bizType} AS bt,
               CASE WHEN ${success.sql} THEN 1 ELSE 0 END AS ok,
               CASE WHEN ${failed.sql} THEN 1 ELSE 0 END AS ko,
               ${lat} AS lat
          FROM ${sql.table}
         WHERE ${where.sql}
      ) w
  ) r
 GROUP BY bt`;
  const rows = await source.db.query<Record<string, unknown>>(statement, [
    ...success.params,
    ...failed.params,
    ...latParams,
    ...where.params,
  ]);
  return rows.map((r) => ({
    bizType: text(r.bt),
    created: num(r.created),
    succeeded: num(r.succeeded),
    failed: num(r.failed),
    latencySum: numOrNull(r.latSum),
    latencyCount: num(r.latN),
    latencyP95: numOrNull(r.p95),
    latencyP95All: numOrNull(r.p95All),
  }));
}

/** One bucket of the latency histogram of one biz type (see core/shards.ts, HISTOGRAM_SCALE). */
export interface LatencyBucketRow {
  bizType: string | null;
  bucket: number;
  count: number;
  max: number;
}

/**
 * The latency histogram of the tasks created in the window that succeeded, per biz type: a
 * latency of v seconds in bucket ⌊HISTOGRAM_SCALE · ln(v + 1)⌋, with each bucket's count and its
 * largest latency. Histograms of several shards add, so their percentiles merge (windowAggregate's
 * exact p95 does not). In: the window filter. Out: one row per biz type and bucket.
 */
export async function latencyHistogram(source: BoundSource, filter: ScanFilter): Promise<LatencyBucketRow[]> {
  const { sql } = source;
  const where = filterWhere(sql, filter);
  const success = sql.statusIn(['success']);
  const lat = `${sql.epoch('updatedAt')} - ${sql.epoch('createdAt')}`;
  const w = and([where, success]);
  const bucket = `FLOOR(${HISTOGRAM_SCALE} * LN(CASE WHEN lat > 0 THEN lat ELSE 0 END + 1))`;
  const select = `
SELECT bt, ${bucket} AS b, COUNT(*) AS n, MAX(lat) AS mx
  FROM (SELECT ${sql.bizTypeExpr()} AS bt, ${lat} AS lat FROM ${sql.table} WHERE ${w.sql}) w
 GROUP BY bt, ${bucket}`;
  const rows = await source.db.query<Record<string, unknown>>(select, w.params);
  return rows.map((r) => ({
    bizType: text(r.bt),
    bucket: num(r.b),
    count: num(r.n),
    max: Math.max(0, num(r.mx)),
  }));
}

/**
 * Failed-jobs tables: the rows that failed in the window (failed_at / fail_time), per biz type
 * (the job class), as the failed-jobs design's hourly sweep groups them.
 * In: filter with sinceEpoch/untilEpoch on the failed time. Out: rows with only `failed` set.
 */
export async function failedInWindow(source: BoundSource, filter: ScanFilter): Promise<WindowRow[]> {
  return (await countByBizType(source, filterWhere(source.sql, filter))).map((r) => ({
    bizType: r.bizType,
    created: 0,
    succeeded: 0,
    failed: r.count,
    latencySum: null,
    latencyCount: 0,
    latencyP95: null,
    latencyP95All: null,
  }));
}

/**
 * Failed tasks awaiting manual action, as of now, whatever the window.
 * In: biz-type filter only. Out: count per biz type. Reads the failed range of the status index.
 */
export async function countFailedOpen(
  source: BoundSource,
  filter: Pick<ScanFilter, 'bizTypes'>,
): Promise<NowRow[]> {
  return countByBizType(
    source,
    and([source.sql.statusIn(['failed']), filterWhere(source.sql, { bizTypes: filter.bizTypes })]),
  );
}

async function countByBizType(source: BoundSource, where: Fragment): Promise<NowRow[]> {
  const { sql } = source;
  const bizType = sql.bizTypeExpr();
  const rows = await source.db.query<{ bt: unknown; n: unknown }>(
    `SELECT ${bizType} AS bt, COUNT(*) AS n FROM ${sql.table} WHERE ${where.sql} GROUP BY ${bizType}`,
    where.params,
  );
  return rows.map((r) => ({ bizType: text(r.bt), count: num(r.n) }));
}

/** How many characters of last_error an alert quotes. */
export const SAMPLE_ERROR_CHARS = 300;

/**
 * The most recent failed task of one biz type (highest id), to name in an alert.
 * In: biz type (null: the profile has none). Out: one sample or null. Reads only.
 */
export async function latestFailure(
  source: BoundSource,
  bizType: string | null,
): Promise<FailureSample | null> {
  const { sql } = source;
  const bizExpr = sql.expr('bizType');
  const parts: Fragment[] = [sql.statusIn(['failed'])];
  if (bizExpr)
    parts.push(
      bizType === null
        ? { sql: `${bizExpr} IS NULL`, params: [] }
        : { sql: `${bizExpr} = ?`, params: [bizType] },
    );
  const where = and(parts);
  const lastError = sql.expr('lastError');
  const rows = await source.db.query<Record<string, unknown>>(
    `SELECT ${sql.expr('id')} AS id, ${sql.expr('bizId') ?? 'NULL'} AS bizId, ${sql.expr('eventId') ?? 'NULL'} AS eventId,
            ${lastError ? source.db.dialect.prefix(lastError, SAMPLE_ERROR_CHARS) : 'NULL'} AS err, ${sql.epoch('updatedAt') ?? 'NULL'} AS at
       FROM ${sql.table} WHERE ${where.sql} ORDER BY ${sql.expr('id')} DESC LIMIT 1`,
    where.params,
  );
  const r = rows[0];
  if (!r) return null;
  return {
    id: sql.id(r.id),
    bizId: toText(r.bizId),
    eventId: toText(r.eventId),
    error: toText(r.err),
    failedAt: toIso(r.at),
  };
}

/**
 * A database queue (`laravel-jobs`) per queue: waiting jobs, due ones, reservations, reservations
 * older than retry_after, and the oldest waiting job's created_at.
 * In: now and the stale-reservation cutoff (epoch). Out: one row per queue. Reads only; one scan.
 */
export async function queueHealth(
  source: BoundSource,
  nowEpoch: number,
  staleCutoffEpoch: number,
): Promise<QueueReport[]> {
  const { sql } = source;
  const queue = sql.expr('queue') ?? `'default'`;
  const waiting = sql.statusIn(['pending']);
  const reserved = sql.statusIn(['processing']);
  const due = and([waiting, sql.timeCompare('nextRetryAt', '<=', nowEpoch)]);
  const stale = and([reserved, sql.timeCompare('updatedAt', '<=', staleCutoffEpoch)]);
  const rows = await source.db.query<Record<string, unknown>>(
    `SELECT ${queue} AS q,
            SUM(CASE WHEN ${waiting.sql} THEN 1 ELSE 0 END) AS backlog,
            SUM(CASE WHEN ${due.sql} THEN 1 ELSE 0 END) AS due,
            SUM(CASE WHEN ${reserved.sql} THEN 1 ELSE 0 END) AS reserved,
            SUM(CASE WHEN ${stale.sql} THEN 1 ELSE 0 END) AS stale,
            MIN(CASE WHEN ${waiting.sql} THEN ${sql.epoch('createdAt')} END) AS oldest
       FROM ${sql.table} GROUP BY ${queue} ORDER BY ${queue}`,
    [...waiting.params, ...due.params, ...reserved.params, ...stale.params, ...waiting.params],
  );
  return rows.map((r) => ({
    queue: String(r.q),
    backlog: num(r.backlog),
    due: num(r.due),
    reserved: num(r.reserved),
    staleReservations: num(r.stale),
    oldestJobSeconds:
      r.oldest === null || r.oldest === undefined ? null : Math.max(0, nowEpoch - Number(r.oldest)),
  }));
}
