import type { BoundSource } from '../bind-source.js';
import { windowField } from './scan.js';

/** One time bucket of tasks created in it, as the table's own time columns tell. */
export interface TrendBucketRow {
  /** Bucket start, epoch seconds (a multiple of the bucket size). */
  start: number;
  created: number;
  /** Of those, now failed. */
  failed: number;
  /** Of those, now succeeded, and the sum of their latencies (updated − created, seconds). */
  succeeded: number;
  latencySum: number | null;
}

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
