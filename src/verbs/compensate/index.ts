/** compensate: manual, guarded and audited changes of chosen tasks. */
export * from './compensate.js';
export { checkDispatchable, dispatchNow } from './now.js';
export { ACTION_RULES, COMPENSATE_ACTIONS, type CompensateAction } from '../../core/compensate-plan.js';
export { parseRate } from '../../core/pacer.js';
export { compensateOutcome, compensateRequest, type CompensateFlags } from './request.js';
export { COMPENSATE_FLAGS, COMPENSATE_IDS_ARG } from './flags.js';
export { compensateFrozen } from './frozen.js';
export { contextEffectGate, effectSetup } from './effects.js';
export { effectBlocksRetry, effectRows, type EffectState, type TaskEffect } from '../../core/effect.js';
export { supportedActions } from './supported-actions.js';
export { runCompensate, type CompensateRun } from './orchestrate.js';
export { compensateShards, type ShardCompensate, type ShardedCompensateResult } from './shards.js';
