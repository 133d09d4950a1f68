import type { Context } from '../context.js';
import type { BoundSource } from '../db/bind-source.js';
import type { ShardSet } from '../ops/shards/set.js';
import { contextEffectGate } from '../verbs/compensate/index.js';
import { allShardTrends } from '../verbs/report/index.js';
import type { ConsoleDeps, ConsoleShards, DiffPages } from './deps.js';
import { diffPages } from './diff-pages.js';
import { queuePages } from './queue-pages.js';
import { verdictSource } from './verdict-source.js';

/** What every console of one run shares: who acts, from where, and the stuck cut-off. */
export type ConsoleCommon = Pick<ConsoleDeps, 'stuckAfterMs' | 'operator' | 'host' | 'readOnly'>;

/** The diff page of a sharded console, at the top and on every shard: off, saying why and what to run instead. */
export const SHARDED_DIFF: DiffPages = {
  names: [],
  problem:
    "The console's diff page does not run on a sharded source yet: run `taskrecon diff`, which reconciles every rule over every shard.",
  run: () => Promise.reject(new Error("the console's diff page does not run on a sharded source")),
};

/**
 * The console's sources wired to the configured rules, brokers and report: one table, or a
 * sharded source's top level (merged overview, verdict over every shard, queues) with a console
 * per shard. A shard's console has its table, its retries' effect checks against its own database
 * (as `compensate` on shards), no queues and no verdict (the top level has them); the diff page is
 * off on a sharded source.
 */
export function wireConsole(
  context: Context,
  opened: { source: BoundSource; set?: ShardSet },
  common: ConsoleCommon,
): ConsoleDeps {
  const { source, set } = opened;
  const queues = queuePages(context);
  if (!set)
    return {
      ...common,
      source,
      diff: diffPages(context, source),
      queues,
      effects: (force) => contextEffectGate(context, source, force),
      verdict: verdictSource(context, source, common.stuckAfterMs),
    };
  const shards: ConsoleShards = {
    shards: set.shards.map((shard) => ({
      name: shard.spec.name,
      deps: {
        ...common,
        source: shard.source,
        shardName: shard.spec.name,
        diff: SHARDED_DIFF,
        effects: (force) => contextEffectGate(context, shard.source, force, shard.spec.db),
      },
    })),
    missing: set.missing,
    concurrency: set.concurrency,
    trends: (nowEpoch) => allShardTrends(set, nowEpoch),
  };
  return {
    ...common,
    source,
    shards,
    diff: SHARDED_DIFF,
    queues,
    verdict: verdictSource(context, source, common.stuckAfterMs, set),
  };
}
