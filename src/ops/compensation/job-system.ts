import type { CompensateAction } from '../../core/compensate-plan.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { Queryable, Row } from '../../db/types.js';
import type { JobSystemWriter } from '../../dispatch/pg-boss.js';
import type { CompensateStore } from '../../db/port/index.js';
import { TaskreconError } from '../../errors.js';
import { column } from '../rows.js';

/**
 * A batch's change made by the job system's own client (pg-boss) on the batch's transaction, after
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
  if (action !== 'retry' && action !== 'forget')
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
    apply: (tx, action, _queue, ids) => store.tasks.executionWrite(tx, source, action, ids),
    close: () => Promise.resolve(),
  };
}
