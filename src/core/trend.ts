/**
 * Trend series over a span, bucket by bucket (the console's charts and `report --trend`): tasks
 * created, failed, failure rate and latency, with the `report` definitions. Pure: "now" is passed in.
 */

/** One time bucket of tasks created in it, as the table's own time columns tell (read by db/sql/console-trends). */
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

export const TREND_SPANS = {
  /** 24 hourly buckets. */
  '24h': { spanSeconds: 86_400, bucketSeconds: 3_600 },
  /** 28 buckets of six hours: fine enough to see a day's rhythm, few enough to read. */
  '7d': { spanSeconds: 7 * 86_400, bucketSeconds: 6 * 3_600 },
} as const;
export type TrendSpan = keyof typeof TREND_SPANS;
export const TREND_SPAN_NAMES = Object.keys(TREND_SPANS) as TrendSpan[];

export interface TrendPoint {
  start: number;
  created: number;
  failed: number;
  /** failed ÷ created; null when none was created. */
  failureRate: number | null;
  /** Average seconds from created to success; null when none succeeded. */
  latencyAvgSeconds: number | null;
}

export interface Trend {
  span: TrendSpan;
  bucketSeconds: number;
  /** Oldest first; every bucket of the span, empty ones as zeros. */
  points: TrendPoint[];
}

export const TREND_SERIES = ['created', 'failed', 'failureRate', 'latencyAvgSeconds'] as const;
export type TrendSeries = (typeof TREND_SERIES)[number];

/** The first bucket start of a span ending with the bucket that holds `nowEpoch`. */
export function trendStart(span: TrendSpan, nowEpoch: number): number {
  const { spanSeconds, bucketSeconds } = TREND_SPANS[span];
  const last = nowEpoch - (nowEpoch % bucketSeconds);
  return last - spanSeconds + bucketSeconds;
}

/**
 * Bucket rows of several tables (a sharded source's shards) added bucket by bucket: counts and
 * latency sums add, so the merged trend is the one a single table of all the rows would give.
 */
export function mergeTrendRows(parts: readonly (readonly TrendBucketRow[])[]): TrendBucketRow[] {
  const byStart = new Map<number, TrendBucketRow>();
  for (const rows of parts)
    for (const r of rows) {
      const seen = byStart.get(r.start);
      if (!seen) {
        byStart.set(r.start, { ...r });
        continue;
      }
      seen.created += r.created;
      seen.failed += r.failed;
      seen.succeeded += r.succeeded;
      seen.latencySum =
        seen.latencySum === null && r.latencySum === null
          ? null
          : (seen.latencySum ?? 0) + (r.latencySum ?? 0);
    }
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}

export function buildTrend(span: TrendSpan, nowEpoch: number, rows: readonly TrendBucketRow[]): Trend {
  const { spanSeconds, bucketSeconds } = TREND_SPANS[span];
  const first = trendStart(span, nowEpoch);
  const byStart = new Map(rows.map((r) => [r.start, r]));
  const points: TrendPoint[] = [];
  for (let start = first; points.length < spanSeconds / bucketSeconds; start += bucketSeconds) {
    const r = byStart.get(start);
    const created = r?.created ?? 0;
    const failed = r?.failed ?? 0;
    points.push({
      start,
      created,
      failed,
      failureRate: created > 0 ? failed / created : null,
      latencyAvgSeconds: r && r.succeeded > 0 && r.latencySum !== null ? r.latencySum / r.succeeded : null,
    });
  }
  return { span, bucketSeconds, points };
}
