/** What one dispatch of a task came to: the core classifies and schedules on it, dispatch/ produces it. */

/**
 * `delivered`: handed to a queue whose consumer writes the outcome itself (`redis-list`, `rabbitmq`);
 * the row stays `processing` and its lease is the deadline for that outcome.
 */
export type DispatchOutcome = 'success' | 'retryable' | 'permanent' | 'delivered';

export interface DispatchResult {
  outcome: DispatchOutcome;
  /** What went wrong, in one line an operator can act on (stored in last_error, truncated). */
  error?: string;
  /** The handler asked to be retried no sooner than this (HTTP Retry-After). */
  retryAfterMs?: number;
}
