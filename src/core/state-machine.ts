import type { LogicalStatus } from './task.js';

/**
 * The task state machine. Pure: no I/O, no clock. Every write to a task
 * row goes through one of these named transitions and is applied by a guarded UPDATE that names
 * the state it expects (see src/db/sql/). Manual actions never bypass it.
 *
 *   pending ──claim──▶ processing ──succeed──▶ success
 *      ▲                  │  │
 *      └──retry/release───┘  └──fail──▶ failed ──manual-retry──▶ pending
 *   processing (lease expired) ──recover──▶ processing           failed ──mark-compensated──▶ compensated
 */
export const TRANSITIONS = {
  /** A worker claims a due task. */
  claim: { from: ['pending'], to: 'processing', actor: 'worker' },
  /** A worker takes over a processing task whose lease has expired. */
  recover: { from: ['processing'], to: 'processing', actor: 'worker' },
  succeed: { from: ['processing'], to: 'success', actor: 'worker' },
  /** Retryable failure: attempts + 1, next retry after the backoff. */
  retry: { from: ['processing'], to: 'pending', actor: 'worker' },
  /** Permanent failure, or attempts exhausted. */
  fail: { from: ['processing'], to: 'failed', actor: 'worker' },
  /** A worker gives a claim back unattempted (shutdown): no attempt is counted. */
  release: { from: ['processing'], to: 'pending', actor: 'worker' },
  /** An operator sends a failed task back to pending, due now. */
  'manual-retry': { from: ['failed'], to: 'pending', actor: 'operator' },
  /** An operator confirms a failed task was fixed by hand. */
  'mark-compensated': { from: ['failed'], to: 'compensated', actor: 'operator' },
  /** An operator gives up on a task that is waiting or stuck. */
  'mark-failed': { from: ['pending', 'processing'], to: 'failed', actor: 'operator' },
  /** Reconciliation found a success whose effect is missing: run it again. */
  requeue: { from: ['success'], to: 'pending', actor: 'operator' },
} as const satisfies Record<
  string,
  { from: readonly LogicalStatus[]; to: LogicalStatus; actor: 'worker' | 'operator' }
>;

export type TransitionName = keyof typeof TRANSITIONS;

export interface TransitionCheck {
  allowed: boolean;
  /** Why not, in words an operator understands. */
  reason?: string;
}

/** Whether a task in `from` may take `transition`. */
export function checkTransition(
  transition: TransitionName,
  from: LogicalStatus | 'unknown',
): TransitionCheck {
  const rule = TRANSITIONS[transition];
  if ((rule.from as readonly string[]).includes(from)) return { allowed: true };
  return {
    allowed: false,
    reason: `${transition} moves a task from ${rule.from.join(' or ')} to ${rule.to}; this task is ${from}`,
  };
}

export function targetOf(transition: TransitionName): LogicalStatus {
  return TRANSITIONS[transition].to;
}
