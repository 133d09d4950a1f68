import {
  buildTrend,
  trendStart,
  TREND_SPANS,
  type Trend,
  type TrendBucketRow,
  type TrendSpan,
} from '../../core/trend.js';
import type { BoundSource } from '../bind-source.js';

export type { TrendBucketRow };
import { windowField } from './scan.js';

/**
 * Tasks created since `sinceEpoch`, counted per bucket of `bucketSeconds` (the console's charts and
 * `report --trend`). Same definitions as `report`: over tasks created in the bucket, failed ones
 * and succeeded ones with their latency. Tables without created_at bucket by updated_at (failed_at).
 * In: since (epoch), bucket size. Out: one row per non-empty bucket. Reads only: the created_at
 * range (an index on created_at serves it; without one, a table scan).
 */
export async function selectTrendBuckets(
  source: BoundSource,
  sinceEpoch: number,
  bucketSeconds: number,
): Promise<TrendBucketRow[]> {
  const { sql } = source;
  const field = windowField(sql);
  if (!field) return [];
  const at = sql.epoch(field) as string;
  const size = Math.max(1, Math.trunc(bucketSeconds));
  const failed = sql.statusIn(['failed']);
  const success = sql.statuses().includes('success') ? sql.statusIn(['success']) : { sql: '1=0', params: [] };
  const latency =
    sql.has('createdAt') && sql.has('updatedAt')
      ? `${sql.epoch('updatedAt')} - ${sql.epoch('createdAt')}`
      : 'NULL';
  const since = sql.timeCompare(field, '>=', sinceEpoch);
  const rows = await source.db.query<{ b: unknown; n: unknown; f: unknown; s: unknown; lat: unknown }>(
    `SELECT (${at} - (${at} % ${size})) AS b, COUNT(*) AS n,
       SUM(CASE WHEN ${failed.sql} THEN 1 ELSE 0 END) AS f,
       SUM(CASE WHEN ${success.sql} THEN 1 ELSE 0 END) AS s,
       SUM(CASE WHEN ${success.sql} THEN ${latency} END) AS lat
     FROM ${sql.table} WHERE ${since.sql} GROUP BY (${at} - (${at} % ${size}))`,
    [...failed.params, ...success.params, ...success.params, ...since.params],
  );
  return rows.map((r) => ({
    start: Number(r.b),
    created: Number(r.n),
    failed: Number(r.f ?? 0),
    succeeded: Number(r.s ?? 0),
    latencySum: r.lat === null || r.lat === undefined ? null : Number(r.lat),
  }));
}

/** The trend series of a span as of `nowEpoch`: the one computation the console and `report --trend` share. */
export async function loadTrend(source: BoundSource, span: TrendSpan, nowEpoch: number): Promise<Trend> {
  const rows = await selectTrendBuckets(source, trendStart(span, nowEpoch), TREND_SPANS[span].bucketSeconds);
  return buildTrend(span, nowEpoch, rows);
}
