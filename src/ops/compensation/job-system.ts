import type { CompensateAction } from '../../core/compensate-plan.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { Queryable, Row } from '../../db/types.js';
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
 * The writer of a job system's table: pg-boss's own client, or the statements River's and Oban's
 * own tools run. Rejects (exit 3) a system version the writer was not made for; nothing is written.
 */
export async function openJobWriter(source: BoundSource): Promise<JobSystemWriter> {
  const system = source.system;
  if (!system) throw new Error(`profile ${source.profile.name} names no job system`);
  if (system.name === 'pg-boss') return openPgBoss(source.db, system);
  return openSqlJobWriter(system, source.sql.table);
}
