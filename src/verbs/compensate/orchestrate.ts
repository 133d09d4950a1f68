import type { TaskreconConfig } from '../../config/schema.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { CompensateRequest, CompensateResult } from '../../ops/compensation/types.js';
import { compensate } from './compensate.js';
import { dispatchNow } from './now.js';

/** A whole `compensate` run as the command and the console ask for it. */
export interface CompensateRun {
  source: BoundSource;
  request: CompensateRequest;
  /** --now: the retried tasks run at once through their handlers (with the config's handlers and retry policy). */
  now?: { config: TaskreconConfig; stuckAfterMs: number };
}

/**
 * `compensate`: the chosen tasks through the state machine, audited; with --now the tasks it sent
 * back to pending are then run at once, unless the run was stopped.
 */
export async function runCompensate(run: CompensateRun): Promise<CompensateResult> {
  const { source, request, now } = run;
  const retried: TaskId[] = [];
  const done = await compensate(source, {
    ...request,
    onApplied: now ? (applied) => retried.push(...applied) : undefined,
  });
  if (now && retried.length > 0 && !request.shouldStop?.())
    done.dispatched = await dispatchNow(source, retried, now.config, now.stuckAfterMs);
  return done;
}
