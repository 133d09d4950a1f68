/** diff: reconcile tasks with the business rows they were meant to write. */
export * from './diff.js';
export { prepareRule, WALK_CHOICES, type WalkChoice } from './prepare.js';
export type { DiffPlan } from './plan.js';
export { defaultOperator, RuleTargets, selectRules } from './targets.js';
export { ruleIndexes } from './indexes.js';
export { DIFF_FLAGS } from './flags.js';
export { checkDiffFlags, diffActor, enqueueRequest } from './request.js';
