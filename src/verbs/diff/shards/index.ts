/** diff on a sharded source: each shard diffed on its own, the findings merged, orphans across shards. */
export { reconcileShards, type ShardDiffRun, type ShardedDiffResult } from './reconcile.js';
export { checkShardDiffFlags } from './request.js';
export type { ShardDiffEntry } from './merge.js';
