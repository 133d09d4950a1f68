import { randomUUID } from 'node:crypto';
import { usageError } from '../../errors.js';
import type { MoveOptions } from './move.js';

/** What the move flags of `queues move` and `queues recover` say. */
export interface MoveFlagValues {
  limit?: number;
  rate?: string;
  batch: number;
  'dry-run'?: boolean;
  yes?: boolean;
  reason?: string;
  operator?: string;
}

/** The move flags as the options of a move or recover, under a new run id. */
export function moveOptionsOf(flags: MoveFlagValues): MoveOptions {
  return {
    limit: flags.limit,
    rate: flags.rate,
    batch: flags.batch,
    dryRun: Boolean(flags['dry-run']),
    reason: flags.reason,
    operator: flags.operator,
    runId: randomUUID(),
  };
}

/**
 * A move asks before it writes: on a terminal (and without --json) it asks the question, elsewhere
 * it needs --yes. A dry run moves nothing and asks nothing.
 */
export async function confirmMoveOrStop(
  flags: MoveFlagValues,
  canAsk: boolean,
  question: string,
  ask: (question: string) => Promise<boolean>,
): Promise<void> {
  if (flags.yes || flags['dry-run']) return;
  if (!canAsk)
    throw usageError(
      'refusing to move jobs without a confirmation: this is not a terminal',
      'Pass --yes, or --dry-run to count what would move.',
    );
  if (!(await ask(question))) throw usageError('nothing moved: not confirmed');
}

/** Whether a move stopped early (Ctrl-C): what moved is audited; the same command moves the rest. */
export function stoppedEarly(result: { moved: number; matched: number }, dryRun: boolean): boolean {
  return !dryRun && result.moved < result.matched;
}
