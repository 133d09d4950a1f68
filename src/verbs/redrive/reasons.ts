import type { RedriveCounts, RedriveEvent, RedriveResult } from '../../ops/redrive/types.js';

/** How many distinct error reasons a summary names (the rest are counted as "other"). */
export const TOP_REASONS = 5;
/** A reason is the first line of the error, this long at most: enough to tell "HTTP 503" from "ECONNREFUSED". */
const REASON_CHARS = 120;

export interface ErrorReason {
  reason: string;
  count: number;
}

/** Why the attempts of one run did not succeed: each retried or failed attempt's error, counted by reason. */
export class ReasonTally {
  private readonly counts = new Map<string, number>();

  /** Counts a retried or failed attempt; other events are ignored. */
  add(event: RedriveEvent): void {
    if (event.event !== 'task_retry' && event.event !== 'task_failed') return;
    const reason = reasonOf(event.error);
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
  }

  /** The most frequent reasons first (ties by text), at most `limit`. */
  top(limit = TOP_REASONS): ErrorReason[] {
    return [...this.counts.entries()]
      .map(([reason, count]) => ({ reason, count }))
      .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason))
      .slice(0, limit);
  }

  get total(): number {
    let sum = 0;
    for (const c of this.counts.values()) sum += c;
    return sum;
  }
}

export function reasonOf(error: string | undefined): string {
  const first = (error ?? '').split('\n')[0]?.trim() ?? '';
  if (first === '') return '(no error text)';
  return first.length > REASON_CHARS ? `${first.slice(0, REASON_CHARS - 1)}…` : first;
}

/** A run in which tasks were attempted and not one attempt succeeded (or was handed to a queue): exit 1. */
export function everyAttemptFailed(result: RedriveCounts & Pick<RedriveResult, 'dryRun'>): boolean {
  if (result.dryRun) return false;
  return result.retried + result.failed > 0 && result.succeeded + result.delivered === 0;
}

/** The one event that ends a `--log-format json` log: the run's counts and why attempts failed. */
export function summaryEvent(result: RedriveResult, reasons: ErrorReason[]): Record<string, unknown> {
  return {
    event: 'run_summary',
    claimed: result.claimed,
    succeeded: result.succeeded,
    delivered: result.delivered,
    retried: result.retried,
    failed: result.failed,
    lostRace: result.lostRace,
    recoveredStuck: result.recoveredStuck,
    released: result.released,
    dryRun: result.dryRun,
    interrupted: result.interrupted,
    durationMs: result.durationMs,
    topErrors: reasons,
  };
}
