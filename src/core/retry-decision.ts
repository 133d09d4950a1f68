import type { DispatchResult } from './dispatch-result.js';
import { retryDelayMs, type RetryPolicy } from './backoff.js';

/**
 * What a worker writes after one attempt: success → `succeed`; a retryable failure →
 * `retry` with attempts + 1 and next retry = now + backoff, unless that was the last attempt allowed,
 * then `fail`; a permanent failure → `fail` at once. Pure: "now" (the database clock, epoch
 * seconds) and the random source are passed in.
 */
export type Decision =
  | { transition: 'succeed' }
  /** Delivered to a queue: write nothing, the consumer settles the row before its lease runs out. */
  | { transition: 'hold' }
  | { transition: 'retry'; attempts: number; nextRetryAtEpoch: number; waitSeconds: number; error: string }
  | { transition: 'fail'; attempts: number; error: string; exhausted: boolean };

export interface DecisionInput {
  result: DispatchResult;
  /** Failed attempts counted before this one (the claim's attempts value). */
  attemptsBefore: number;
  policy: RetryPolicy;
  /** The row's own max_attempts (job_retries), which wins over the policy's. */
  rowMaxAttempts?: number | null;
  nowEpoch: number;
  random?: () => number;
}

export function decide(input: DecisionInput): Decision {
  const { result, policy } = input;
  if (result.outcome === 'success') return { transition: 'succeed' };
  if (result.outcome === 'delivered') return { transition: 'hold' };
  const attempts = input.attemptsBefore + 1;
  const error = result.error ?? (result.outcome === 'permanent' ? 'permanent failure' : 'retryable failure');
  if (result.outcome === 'permanent') return { transition: 'fail', attempts, error, exhausted: false };
  const max = input.rowMaxAttempts && input.rowMaxAttempts > 0 ? input.rowMaxAttempts : policy.maxAttempts;
  if (attempts >= max)
    return {
      transition: 'fail',
      attempts,
      error: `${error} (gave up after ${attempts} attempts)`,
      exhausted: true,
    };
  // The column holds whole seconds: round the wait up, so a retry is never earlier than the policy says.
  const waitSeconds = Math.ceil(retryDelayMs(policy, attempts, result.retryAfterMs, input.random) / 1000);
  return {
    transition: 'retry',
    attempts,
    nextRetryAtEpoch: input.nowEpoch + waitSeconds,
    waitSeconds,
    error,
  };
}
