import { decide, type CompensateAction, type Decision } from '../../core/compensate-plan.js';
import type { LogicalStatus, TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { Queryable, Row } from '../../db/types.js';
import type { CompensateStore } from '../../db/port/index.js';
import { openSqlJobWriter } from '../../db/job-system-writer.js';
import { openPgBoss, type JobSystemWriter } from '../../dispatch/pg-boss.js';
import { TaskreconError } from '../../errors.js';
import { column } from '../rows.js';

/**
 * A batch's change made by the job system's writer (pg-boss's own client, River's or Oban's statements) on the batch's transaction, after
 * the rows were locked and re-checked: one call per queue (its API takes a queue and ids). Fewer
 * changed than locked means the client's own guard (`state = 'failed'`) found them moved: the
 * batch rolls back.
 */
export async function writeThrough(
  writer: JobSystemWriter,
  source: BoundSource,
  action: CompensateAction,
  tx: Queryable,
  movers: ReadonlyArray<{ id: TaskId; row: Row }>,
): Promise<void> {
  if (action !== 'retry' && action !== 'forget' && action !== 'mark-compensated')
    throw new Error(`${action} has no ${source.profile.name} operation`);
  const queueRef = source.profile.fields.bizType;
  const byQueue = new Map<string, string[]>();
  for (const m of movers) {
    const queue = String(queueRef && 'column' in queueRef ? column(m.row, queueRef.column) : '');
    byQueue.set(queue, [...(byQueue.get(queue) ?? []), String(m.id)]);
  }
  let changed = 0;
  for (const [queue, ids] of byQueue) changed += await writer.apply(tx, action, queue, ids);
  if (changed !== movers.length) {
    throw new TaskreconError(
      `${writer.client} changed ${changed} of ${movers.length} locked jobs; the batch was rolled back`,
      {
        code: 'GUARD',
        hint: 'Another writer moved them meanwhile; run the command again: it redoes nothing already done.',
      },
    );
  }
}

/**
 * Solid Queue's writes (retry: failed execution → ready execution; forget: the failed execution and
 * the job deleted), made in SQL as its own models make them, on the batch's transaction.
 */
export function solidQueueWriter(store: CompensateStore, source: BoundSource): JobSystemWriter {
  return {
    client: 'solid-queue (SolidQueue::FailedExecution#retry, Job#discard semantics)',
    apply: (tx, action, _queue, ids) => {
      if (action === 'mark-compensated') throw new Error('Solid Queue has no compensated state to write');
      return store.tasks.executionWrite(tx, source, action, ids);
    },
    close: () => Promise.resolve(),
  };
}

/**
 * What to do with a row in `status`. A job system's job that is no longer failed is refused, not
 * "already" done: its own workers may have run it since, and pending there is no mark of a retry.
 */
export function jobDecision(
  source: BoundSource,
  action: CompensateAction,
  status: LogicalStatus | 'unknown',
): Decision {
  const decision = decide(action, status);
  if (decision.kind !== 'already' || source.profile.kind !== 'job-system') return decision;
  return {
    kind: 'refused',
    from: status,
    reason: `the job is no longer failed (it is ${status}): ${source.profile.name} ${action === 'forget' ? 'discards' : 'retries'} failed jobs only`,
  };
}

/**
 * The writer of a job system's table: pg-boss's own client, or the statements River's and Oban's
 * own tools run. Rejects (exit 3) a system version the writer was not made for; nothing is written.
 */
export async function openJobWriter(source: BoundSource): Promise<JobSystemWriter> {
  const system = source.system;
  if (!system) throw new Error(`profile ${source.profile.name} names no job system`);
  if (system.name === 'pg-boss') return openPgBoss(source.db, system);
  return openSqlJobWriter(system, source.sql.table);
}
