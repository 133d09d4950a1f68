import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import { and } from '../fragment.js';
import { fenceWhere, type ClaimFence } from './transitions.js';

/**
 * Extends a running claim's lease through its fenced row: the row must still be processing and
 * still carry the fence its claim (or the previous beat) wrote, and it then carries the new
 * expiry, which becomes the fence every later write names.
 * In: the task id, its current fence, the new lease expiry (epoch seconds, later than the fence).
 * Out: whether the row took it (false: the claim was taken over, or the task moved on).
 * Side effects: one guarded UPDATE of next_retry_time (= the new expiry) and updated_at (= now).
 */
export async function extendLease(
  source: BoundSource,
  id: TaskId,
  fence: ClaimFence,
  leaseUntilEpoch: number,
): Promise<boolean> {
  const { sql } = source;
  const nrt = sql.expr('nextRetryAt');
  if (!nrt) throw new Error(`profile ${sql.profile.name} has no next-retry column to fence claims with`);
  const set = [`${nrt} = ${sql.dialect.epochParam(sql.timeTypes.nextRetryAt ?? 'datetime')}`];
  const updatedAt = sql.expr('updatedAt');
  if (updatedAt) set.push(`${updatedAt} = ${sql.nowOf('updatedAt')}`);
  const where = and([
    { sql: `${sql.expr('id')} = ?`, params: [id] },
    sql.statusIn(['processing']),
    fenceWhere(sql, fence),
  ]);
  const result = await source.db.execute(`UPDATE ${sql.table} SET ${set.join(', ')} WHERE ${where.sql}`, [
    leaseUntilEpoch,
    ...where.params,
  ]);
  return result.affectedRows === 1;
}
