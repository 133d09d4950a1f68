import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import { placeholders } from '../task-sql.js';
import type { Queryable } from '../types.js';

/**
 * The writes of a job table kept by executions (Solid Queue), as its own models make them, on the
 * caller's transaction (the jobs are locked and re-checked before):
 * - `retry` (FailedExecution#retry): the failed execution is deleted and a ready execution is
 *   inserted with the job's queue and priority and the time of now;
 * - `forget` (discarding a failed job): the failed execution and the job are deleted.
 * Out: how many failed executions were deleted (fewer than `ids`: some job is no longer failed).
 */
export async function executionWrite(
  tx: Queryable,
  source: BoundSource,
  action: 'retry' | 'forget',
  ids: readonly TaskId[],
): Promise<number> {
  const { sql, profile } = source;
  const model = profile.status;
  const idRef = profile.fields.id;
  if (model.kind !== 'executions' || !idRef || !('column' in idRef) || ids.length === 0) return 0;
  const q = (name: string) => sql.dialect.quoteId(name);
  const failed = model.tables.find((t) => t.status === 'failed')?.table;
  const ready = model.tables.find((t) => t.raw === 'ready')?.table;
  if (!failed || !ready) return 0;
  const list = placeholders(ids);
  const removed = await tx.execute(`DELETE FROM ${q(failed)} WHERE ${q(model.jobKey)} IN (${list})`, [
    ...ids,
  ]);
  if (action === 'forget') {
    await tx.execute(`DELETE FROM ${sql.table} WHERE ${q(idRef.column)} IN (${list})`, [...ids]);
    return removed.affectedRows;
  }
  await tx.execute(
    `INSERT INTO ${q(ready)} (${q(model.jobKey)}, ${q('queue_name')}, ${q('priority')}, ${q('created_at')})
     SELECT ${q(idRef.column)}, ${q('queue_name')}, ${q('priority')}, ${sql.dialect.nowOf('datetime')}
       FROM ${sql.table} WHERE ${q(idRef.column)} IN (${list})`,
    [...ids],
  );
  return removed.affectedRows;
}
