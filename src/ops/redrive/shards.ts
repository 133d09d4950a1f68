import { eachShard, type ShardSet } from '../shards/set.js';
import { runRedrive } from './redrive.js';
import { zeroCounts, type RedriveCounts, type RedriveOptions, type RedriveResult } from './types.js';

/** One shard's part of a sharded redrive. */
export type ShardRedrive = RedriveCounts & { shard: string; now: string };

export type ShardedRedriveResult = RedriveResult & { shards: ShardRedrive[]; missingShards?: string[] };

/**
 * redrive on every shard of a sharded source, `set.concurrency` shards at a time: each shard is
 * claimed, leased, fenced and settled in its own database against its own clock, exactly as a
 * table of its own (two runs over the same shards deliver each task once because each shard's
 * claims are). `--max-tasks` bounds each shard. The counts add up; `shards` keeps each one's.
 */
export async function runRedriveShards(
  set: ShardSet,
  options: RedriveOptions,
): Promise<ShardedRedriveResult> {
  const started = Date.now();
  const live = new Map<string, RedriveCounts>();
  const total = () => {
    const sum = zeroCounts();
    for (const c of live.values())
      for (const k of Object.keys(sum) as (keyof RedriveCounts)[]) sum[k] += c[k];
    return sum;
  };
  const parts = await eachShard(set, async ({ spec, source }) => {
    const result = await runRedrive(source, {
      ...options,
      log: options.log && ((event) => options.log?.({ ...event, shard: spec.name } as typeof event)),
      onProgress: (counts) => {
        live.set(spec.name, counts);
        options.onProgress?.(total());
      },
    });
    return { shard: spec.name, result };
  });
  const first = parts[0]?.result;
  if (!first) throw new Error('no shard answered');
  const counts = zeroCounts();
  const unhandled = new Map<string | null, number>();
  for (const { result } of parts) {
    for (const k of Object.keys(counts) as (keyof RedriveCounts)[]) counts[k] += result[k];
    for (const u of result.unhandled) unhandled.set(u.bizType, (unhandled.get(u.bizType) ?? 0) + u.count);
  }
  return {
    ...first,
    ...counts,
    source: set.name,
    now:
      parts
        .map((p) => p.result.now)
        .sort()
        .at(-1) ?? first.now,
    durationMs: Date.now() - started,
    interrupted: parts.some((p) => p.result.interrupted),
    skipLocked: parts.every((p) => p.result.skipLocked),
    unhandled: [...unhandled].map(([bizType, count]) => ({ bizType, count })),
    shards: parts.map(({ shard, result }) => {
      const own = zeroCounts();
      for (const k of Object.keys(own) as (keyof RedriveCounts)[]) own[k] = result[k];
      return { shard, now: result.now, ...own };
    }),
    ...(set.missing.length ? { missingShards: set.missing.map((m) => m.name) } : {}),
  };
}
