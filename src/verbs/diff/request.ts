import { hostname } from 'node:os';
import { usageError } from '../../errors.js';
import { defaultOperator } from '../../ops/operator.js';

export interface DiffWriteFlags {
  enqueue?: boolean;
  'create-missing'?: boolean;
  'dry-run'?: boolean;
  operator?: string;
  reason?: string;
}

/** --dry-run only means something with a write (--enqueue, --create-missing). */
export function checkDiffFlags(flags: DiffWriteFlags): void {
  if (flags['dry-run'] && !flags.enqueue && !flags['create-missing'])
    throw usageError(
      '--dry-run goes with --enqueue or --create-missing',
      'Without them diff writes nothing anyway.',
    );
}

/** Who, where and why for the audit of diff's writes. */
export function diffActor(flags: DiffWriteFlags, defaultReason: string | null) {
  return {
    operator: flags.operator ?? defaultOperator(),
    host: hostname(),
    reason: flags.reason ?? defaultReason,
    dryRun: Boolean(flags['dry-run']),
  };
}

/** --enqueue's request: missing tasks back to pending, audited with this reason unless --reason. */
export function enqueueRequest(flags: DiffWriteFlags) {
  if (!flags.enqueue) return undefined;
  const actor = diffActor(flags, 'diff: task says success, business effect missing');
  return { ...actor, reason: actor.reason ?? '' };
}
