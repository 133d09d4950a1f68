/** redrive: claim what is due or stuck, run it through its handler, settle the outcome. */
export * from '../../ops/redrive/redrive.js';
export { checkRedrive, redriveLeaseMs } from './request.js';
export { REDRIVE_FLAGS } from './flags.js';
export { everyAttemptFailed, ReasonTally, summaryEvent, type ErrorReason } from './reasons.js';
export { runRedriveShards, type ShardedRedriveResult } from '../../ops/redrive/shards.js';
