/**
 * What the Redis broker asks of BullMQ, in one module it imports when a BullMQ layout needs it
 * (`bullmqApi()`): BullMQ and its dependencies are a good part of a run's start-up, which a
 * Laravel or think-queue broker never pays.
 */
export { bullmqFindings, bullmqQueueStats, failedPage } from './inspect.js';
export { jobState, moveFailed, retryIfStillFailed } from './move.js';
export { bullmqQueueNames, noBullmqQueues, otherBullmqPrefixes } from './queues.js';
export { recoverStalled } from './recover.js';
export { finishMove } from './run.js';
