import { LATENCY_PERCENTILE, type Capabilities, type NowRow, type WindowRow } from './report.js';
import { histogramPercentile, mergeHistograms, type HistogramBucket } from './shards.js';

/** One shard's report rows, with the clock they were read against. */
export interface ShardReportRows {
  nowEpoch: number;
  window: WindowRow[];
  due: NowRow[];
  stuck: NowRow[];
  failedOpen: NowRow[];
  histogram?: (HistogramBucket & { bizType: string | null })[];
}

/**
 * What every shard computed: a figure one shard held back (a big table no index serves for it,
 * without --full-scan) is held back for the whole source, and the other shards' rows of it are
 * dropped — a sum over some shards is no figure of the source.
 */
export function commonCapabilities(parts: readonly Capabilities[]): Capabilities {
  const [head, ...rest] = parts;
  if (!head) throw new Error('no shard answered');
  const out = { ...head };
  for (const c of rest) for (const k of Object.keys(out) as (keyof Capabilities)[]) out[k] = out[k] && c[k];
  // failedInWindowOnly says what `failed` means (a failed-jobs table), the same on every shard.
  out.failedInWindowOnly = head.failedInWindowOnly;
  return out;
}

/** One shard's rows without the figures the source as a whole does not compute. */
export function keepCommon<T extends ShardReportRows>(rows: T, c: Capabilities): T {
  return {
    ...rows,
    window: c.window ? rows.window : [],
    due: c.due ? rows.due : [],
    stuck: c.stuck ? rows.stuck : [],
    failedOpen: c.failedOpen ? rows.failedOpen : [],
    histogram: c.window && c.latency ? rows.histogram : undefined,
  };
}

export interface MergedReportRows {
  window: WindowRow[];
  due: NowRow[];
  stuck: NowRow[];
  failedOpen: NowRow[];
}

/**
 * The rows of every shard as the rows of one table: counts add per biz type; latency sums and
 * counts add; the p95s come from the merged latency histograms (their error bound is in
 * core/shards.ts); the oldest due is the oldest of all, each age taken on its own shard's clock and
 * stated against `nowEpoch`.
 */
export function mergeShardReportRows(parts: readonly ShardReportRows[], nowEpoch: number): MergedReportRows {
  const window = new Map<string | null, WindowRow>();
  const histograms = new Map<string | null, HistogramBucket[][]>();
  const all: HistogramBucket[][] = [];
  for (const part of parts) {
    for (const row of part.window) {
      const seen = window.get(row.bizType);
      if (!seen) window.set(row.bizType, { ...row, latencyP95: null, latencyP95All: null });
      else {
        seen.created += row.created;
        seen.succeeded += row.succeeded;
        seen.failed += row.failed;
        seen.latencySum =
          seen.latencySum === null && row.latencySum === null
            ? null
            : (seen.latencySum ?? 0) + (row.latencySum ?? 0);
        seen.latencyCount += row.latencyCount;
      }
    }
    if (part.histogram) {
      all.push(part.histogram);
      for (const b of part.histogram) {
        const list = histograms.get(b.bizType) ?? [];
        list.push([b]);
        histograms.set(b.bizType, list);
      }
    }
  }
  const rows = [...window.values()];
  for (const row of rows) {
    const buckets = histograms.get(row.bizType);
    row.latencyP95 = buckets ? histogramPercentile(mergeHistograms(buckets), LATENCY_PERCENTILE) : null;
  }
  const first = rows[0];
  if (first && all.length)
    first.latencyP95All = histogramPercentile(mergeHistograms(all), LATENCY_PERCENTILE);
  const nowRows = (pick: (p: ShardReportRows) => NowRow[]): NowRow[] => {
    const byBiz = new Map<string | null, NowRow>();
    for (const part of parts)
      for (const row of pick(part)) {
        // An age on the shard's own clock, as an instant on the merged one.
        const oldest =
          row.oldestEpoch === null || row.oldestEpoch === undefined
            ? null
            : nowEpoch - (part.nowEpoch - row.oldestEpoch);
        const seen = byBiz.get(row.bizType);
        if (!seen) byBiz.set(row.bizType, { bizType: row.bizType, count: row.count, oldestEpoch: oldest });
        else {
          seen.count += row.count;
          if (oldest !== null)
            seen.oldestEpoch =
              seen.oldestEpoch === null || seen.oldestEpoch === undefined
                ? oldest
                : Math.min(seen.oldestEpoch, oldest);
        }
      }
    return [...byBiz.values()];
  };
  return {
    window: rows,
    due: nowRows((p) => p.due),
    stuck: nowRows((p) => p.stuck),
    failedOpen: nowRows((p) => p.failedOpen),
  };
}
