/** diff: reconcile tasks with the business rows they were meant to write. */
export * from './diff.js';
export { prepareRule, WALK_CHOICES, type WalkChoice } from './prepare.js';
export type { DiffPlan } from './plan.js';
export { RuleTargets, selectRules } from './targets.js';
export {
  checkCreatable,
  createMissing,
  CreateMissingSession,
  withCollector,
  type CreateMissingItem,
  type CreateMissingRequest,
  type CreateMissingResult,
} from './create-missing.js';
export { confirmEnqueue, enqueueDeclined } from './enqueue-confirm.js';
export { ruleIndexes } from '../../ops/rule-indexes.js';
export { DIFF_FLAGS } from './flags.js';
export { checkDiffFlags, diffActor, enqueueRequest } from './request.js';
export { reconcile, type DiffRun, type DiffRunFlags, type DiffRunResult } from './orchestrate.js';
export {
  checkShardDiffFlags,
  reconcileShards,
  type ShardDiffEntry,
  type ShardedDiffResult,
} from './shards/index.js';
