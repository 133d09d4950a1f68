import { mergeSorted } from '../../core/shards.js';
import type { Task } from '../../core/task.js';
import type { Figure } from '../../ops/full-scan.js';
import { eachShard, shardsWhere, type MissingShard, type ShardSet } from '../../ops/shards/set.js';
import { scanRequest, type ScanFlags } from './request.js';
import { scan, type BizTypeSummary, type ScanResult, type ScanSummary, type StatusCounts } from './scan.js';

/** One shard of a sharded scan: reached or not, its clock and its total. */
export interface ShardOutcome {
  name: string;
  ok: boolean;
  now?: string;
  total?: number;
  error?: string;
}

/** A task of a sharded source names its shard. */
export type ShardTask = Task & { shard: string };

/** `scan` of a sharded source: one answer for every shard, each row naming its shard. */
export type ShardedScanResult = ScanResult & { shards: ShardOutcome[]; missingShards?: string[] };

/**
 * `scan` on every shard of a sharded source, `set.concurrency` at a time, each against its own
 * server's clock, merged exactly: counts add, the oldest due is the oldest of all, lists merge in
 * their order and keep the first `--limit` of all (each shard returns its own first `--limit`).
 */
export async function scanShards(
  set: ShardSet,
  flags: ScanFlags,
  stuckAfterMs: number,
): Promise<ShardedScanResult> {
  const parts = await eachShard(set, async ({ spec, source }) => {
    const result = await scan(source, await scanRequest(source, flags, stuckAfterMs));
    const named = (tasks: Task[] | undefined): ShardTask[] =>
      (tasks ?? []).map((t) => ({ shard: spec.name, ...t }));
    return {
      name: spec.name,
      result,
      stuck: named(result.stuck),
      due: named(result.due),
      failed: named(result.failed),
      orphans: result.orphans ? named(result.orphans) : undefined,
    };
  });
  const first = parts[0]?.result as ScanResult;
  const summary = sumSummaries(parts.map((p) => p.result.summary));
  const byOrder = flags.order === 'id' ? compareById : compareByNextRetry;
  const list = (pick: (p: (typeof parts)[number]) => ShardTask[]) =>
    mergeSorted(parts.map(pick), byOrder, flags.limit);
  const orphanLists = parts.map((p) => p.orphans).filter((o): o is ShardTask[] => o !== undefined);
  const skipped = parts.flatMap((p) => p.result.skipped ?? []);
  return {
    ...first,
    source: {
      ...first.source,
      ...shardsWhere(
        parts.length,
        set.shards.map((s) => s.source.db.display),
      ),
    },
    summary,
    byBizType: heldBack(parts, 'byBizType')
      ? []
      : commonBizFigures(sumBizTypes(parts.map((p) => p.result.byBizType)), summary),
    stuck: list((p) => p.stuck),
    due: list((p) => p.due),
    failed: list((p) => p.failed),
    ...(orphanLists.length ? { orphans: mergeSorted(orphanLists, compareById, flags.limit) } : {}),
    notes: [...new Set(parts.flatMap((p) => p.result.notes))],
    ...(skipped.length ? { skipped: dedupeBy(skipped, (f) => JSON.stringify(f)) } : {}),
    shards: outcomes(parts, set.missing),
    ...(set.missing.length ? { missingShards: set.missing.map((m) => m.name) } : {}),
  };
}

function outcomes(
  parts: { name: string; result: ScanResult }[],
  missing: readonly MissingShard[],
): ShardOutcome[] {
  return [
    ...parts.map((p) => ({ name: p.name, ok: true, now: p.result.now, total: p.result.summary.total })),
    ...missing.map((m) => ({ name: m.name, ok: false, error: m.error })),
  ];
}

/** A count of every shard: null (not computed) when one shard did not compute it — a sum over some shards is no count. */
const addNullable = (a: number | null, b: number | null): number | null =>
  a === null || b === null ? null : a + b;

/** Whether a shard held a figure back (a big table no index serves for it, without --full-scan). */
function heldBack(parts: readonly { result: ScanResult }[], figure: Figure): boolean {
  return parts.some((p) => p.result.skipped?.includes(figure));
}

/** Per-biz-type due and stuck only where the source as a whole has them. */
function commonBizFigures(byBizType: BizTypeSummary[], summary: ScanSummary): BizTypeSummary[] {
  if (summary.due !== null && summary.stuck !== null) return byBizType;
  return byBizType.map((b) => ({
    ...b,
    ...(summary.due === null ? { due: null, oldestDueSeconds: null } : {}),
    ...(summary.stuck === null ? { stuck: null } : {}),
  }));
}
const maxNullable = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : Math.max(a, b);

function addCounts(into: StatusCounts, from: StatusCounts): void {
  for (const k of Object.keys(into) as (keyof StatusCounts)[]) into[k] += from[k];
}

/** Summaries of several shards as one: counts add, the oldest due is the oldest of all. */
export function sumSummaries(parts: readonly ScanSummary[]): ScanSummary {
  const [head, ...rest] = parts;
  if (!head) throw new Error('no shard answered');
  const out: ScanSummary = { ...head, byStatus: { ...head.byStatus } };
  for (const p of rest) {
    out.total += p.total;
    addCounts(out.byStatus, p.byStatus);
    out.stuck = addNullable(out.stuck, p.stuck);
    out.due = addNullable(out.due, p.due);
    out.oldestDueSeconds = maxNullable(out.oldestDueSeconds, p.oldestDueSeconds);
    if (out.due === null) out.oldestDueSeconds = null;
    if (out.orphans !== undefined || p.orphans !== undefined)
      out.orphans = (out.orphans ?? 0) + (p.orphans ?? 0);
  }
  return out;
}

/** Per-biz-type summaries of several shards, added by biz type, in scan's order (most first). */
export function sumBizTypes(parts: readonly BizTypeSummary[][]): BizTypeSummary[] {
  const byBiz = new Map<string | null, BizTypeSummary>();
  for (const part of parts)
    for (const b of part) {
      const seen = byBiz.get(b.bizType);
      if (!seen) {
        byBiz.set(b.bizType, { ...b, byStatus: { ...b.byStatus } });
        continue;
      }
      seen.total += b.total;
      addCounts(seen.byStatus, b.byStatus);
      seen.stuck = addNullable(seen.stuck, b.stuck);
      seen.due = addNullable(seen.due, b.due);
      seen.oldestDueSeconds = maxNullable(seen.oldestDueSeconds, b.oldestDueSeconds);
    }
  return [...byBiz.values()].sort(
    (a, b) => b.total - a.total || String(a.bizType).localeCompare(String(b.bizType)),
  );
}

const compareIds = (a: Task['id'], b: Task['id']): number =>
  typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b));

/** The list order of every shard: no next-retry time first, then by it, then by shard and id. */
export function compareByNextRetry(a: ShardTask, b: ShardTask): number {
  if (a.nextRetryAt !== b.nextRetryAt) {
    if (a.nextRetryAt === null) return -1;
    if (b.nextRetryAt === null) return 1;
    return a.nextRetryAt < b.nextRetryAt ? -1 : 1;
  }
  return compareIds(a.id, b.id) || a.shard.localeCompare(b.shard);
}

export function compareById(a: ShardTask, b: ShardTask): number {
  return compareIds(a.id, b.id) || a.shard.localeCompare(b.shard);
}

function dedupeBy<T>(items: readonly T[], key: (t: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const i of items) if (!seen.has(key(i))) seen.set(key(i), i);
  return [...seen.values()];
}
