import { boundedAll } from '../../core/shards.js';
import type { BoundSource } from '../../db/bind-source.js';
import { maskDsnText } from '../../db/dsn.js';
import { scanSummary, type BizTypeSummary, type ScanSummary } from './scan.js';
import { sumBizTypes, sumSummaries } from './shards.js';

/** One shard's part of a merged overview: its own figures, or why it did not answer. */
export interface ShardOverviewEntry {
  name: string;
  summary?: ScanSummary;
  error?: string;
}

/** The overview of a sharded source: each shard's figures, and their sums over the shards that answered. */
export interface ShardOverview {
  shards: ShardOverviewEntry[];
  /** Undefined when no shard answered. */
  summary?: ScanSummary;
  byBizType: BizTypeSummary[];
  notes: string[];
  /** The latest clock of the shards that answered (as `report` on shards takes it); undefined when none did. */
  nowEpoch?: number;
}

/**
 * `scan`'s summary (no lists) on every shard, `concurrency` at a time, each on its own clock, and
 * the sums: counts add, the oldest due is the oldest of all. A shard that fails to answer is kept
 * with its error (masked) and left out of the sums, never counted as zero.
 */
export async function shardOverview(
  shards: ReadonlyArray<{ name: string; source: BoundSource }>,
  options: { stuckAfterMs: number; concurrency: number },
): Promise<ShardOverview> {
  const parts = await boundedAll(shards, options.concurrency, async ({ name, source }) => {
    try {
      const nowEpoch = await source.db.nowEpoch();
      const head = await scanSummary(source, { nowEpoch, stuckAfterMs: options.stuckAfterMs, limit: 0 });
      return { name, head, nowEpoch };
    } catch (error) {
      return { name, error: maskDsnText((error as Error)?.message ?? String(error)) };
    }
  });
  const answered = parts.flatMap((p) => (p.head ? [p.head] : []));
  return {
    shards: parts.map((p) =>
      p.head ? { name: p.name, summary: p.head.summary } : { name: p.name, error: p.error },
    ),
    ...(answered.length ? { summary: sumSummaries(answered.map((h) => h.summary)) } : {}),
    byBizType: sumBizTypes(answered.map((h) => h.byBizType)),
    notes: [...new Set(answered.flatMap((h) => h.notes))],
    ...(answered.length ? { nowEpoch: Math.max(...parts.flatMap((p) => (p.head ? [p.nowEpoch] : []))) } : {}),
  };
}
