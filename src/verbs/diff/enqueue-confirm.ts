import { ExitCode, TaskreconError, usageError } from '../../errors.js';

/**
 * `diff --enqueue` writes (tasks back to pending, audited), so it asks first as compensate does:
 * on a terminal a confirmation that defaults to no; elsewhere it needs `--yes`. A dry run asks
 * nothing. Returns false when the operator said no (nothing is written then).
 */
export async function confirmEnqueue(
  flags: { enqueue?: boolean; yes?: boolean; 'dry-run'?: boolean },
  interactive: boolean,
  ask: (message: string) => Promise<boolean>,
): Promise<boolean> {
  if (!flags.enqueue || flags.yes || flags['dry-run']) return true;
  if (!interactive)
    throw usageError(
      '--enqueue writes (tasks whose effect is missing go back to pending) and this is not a terminal to confirm it on',
      'Add --yes to enqueue without asking, or --dry-run to see what it would do.',
    );
  return ask('Send every task whose business effect is missing back to pending for redrive (audited)?');
}

/** The operator said no: nothing is read into pending or written; the run ends with exit 0. */
export function enqueueDeclined(): TaskreconError {
  return new TaskreconError('nothing changed: --enqueue was not confirmed', {
    code: 'CANCELLED',
    exit: ExitCode.ok,
  });
}
