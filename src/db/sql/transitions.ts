import { TRANSITIONS, type TransitionName } from '../../core/state-machine.js';
import type { LogicalStatus, TaskId } from '../../core/task.js';
import { TaskreconError } from '../../errors.js';
import type { BoundSource } from '../bind-source.js';
import { and, type Fragment } from '../fragment.js';
import { placeholders, type TaskSql } from '../task-sql.js';
import type { Queryable } from '../types.js';

/**
 * Guarded writes of the state machine: every statement names the state it expects
 * (`status IN (from…)` of the transition) and sets `updated_at`; a row that moved on meanwhile
 * updates 0 rows and the caller reports it. Worker completions also carry the claim's fence.
 *
 * Fencing (decided here, used by claims.ts): a claim writes its lease expiry into the
 * next-retry column (`next_retry_time = claim now + lease`). A takeover of an expired lease
 * writes a later expiry and counts the abandoned attempt (attempts + 1), so a completion that
 * still names the old (expiry, attempts) pair updates 0 rows: the late worker lost the race.
 * The expiry strictly grows because a lease is at least 1 s and a takeover needs the old one
 * to have passed.
 */

/** What a claim wrote and its completion must still find. */
export interface ClaimFence {
  /** The lease expiry written into the next-retry column, epoch seconds. */
  leaseUntilEpoch: number;
  /** The attempts value after the claim (null for a profile without attempts). */
  attempts: number | null;
}

export interface TransitionWrite {
  transition: TransitionName;
  /** One row, or several that take the same write. */
  id: TaskId | readonly TaskId[];
  /** Narrows the expected states (default: every `from` of the transition). */
  expect?: readonly LogicalStatus[];
  /** For a worker completing its own claim: the row must still carry it. */
  fence?: ClaimFence;
  /** New attempts value (left alone when undefined). */
  attempts?: number;
  /** New next retry time, epoch seconds; `'now'` for due at once (database clock). */
  nextRetryAt?: number | 'now';
  /** New last error (null clears it; undefined leaves it). Truncated to the column's length. */
  lastError?: string | null;
}

/** Fallback cap for a last_error column of unknown or huge length (TEXT): enough for any stack summary. */
const TEXT_ERROR_CHARS = 4000;

/** How many characters the live last-error column holds (VARCHAR(512) → 512), read from the live schema. */
export function lastErrorLimit(source: BoundSource): number {
  const column = source.sql.profile.fields.lastError;
  if (!column || !('column' in column)) return TEXT_ERROR_CHARS;
  const live = source.columns.find((c) => c.name.toLowerCase() === column.column.toLowerCase());
  if (!live?.maxLength) return TEXT_ERROR_CHARS;
  // TEXT types report their byte length; a utf8mb4 character may take 4 bytes.
  if (live.dataType.endsWith('text')) return Math.min(TEXT_ERROR_CHARS, Math.floor(live.maxLength / 4));
  return live.maxLength;
}

/** Cuts `text` to `limit` characters (code points, as the database counts them), marking the cut with "…". */
export function truncateError(text: string, limit: number): string {
  const chars = Array.from(text);
  if (chars.length <= limit) return text;
  return chars.slice(0, Math.max(0, limit - 1)).join('') + '…';
}

/** The stored status value a transition writes, or an error naming what the profile lacks. */
function targetValue(sql: TaskSql, status: LogicalStatus): string | number {
  const value = sql.rawStatus(status);
  if (value === undefined) {
    throw new TaskreconError(`profile ${sql.profile.name} has no '${status}' status value to write`, {
      code: 'PROFILE_CAPABILITY',
      hint: `Map the '${status}' status under \`statuses:\` in the source.`,
    });
  }
  return value;
}

/** The fence as a predicate: the lease expiry and the attempts the claim wrote. */
export function fenceWhere(sql: TaskSql, fence: ClaimFence): Fragment {
  const nrt = sql.expr('nextRetryAt');
  if (!nrt) throw new Error(`profile ${sql.profile.name} has no next-retry column to fence claims with`);
  const parts: Fragment[] = [
    {
      sql: `${nrt} = ${sql.dialect.epochParam(sql.timeTypes.nextRetryAt ?? 'datetime')}`,
      params: [fence.leaseUntilEpoch],
    },
  ];
  const attempts = sql.expr('attempts');
  if (attempts && fence.attempts !== null) parts.push({ sql: `${attempts} = ?`, params: [fence.attempts] });
  return and(parts);
}

/**
 * Builds the guarded statement of one transition (pure; see applyTransition).
 * Profiles without a `success` status (job_retries holds only work still to do) finish a
 * successful task by deleting its row, under the same guard.
 */
export function transitionStatement(source: BoundSource, write: TransitionWrite): Fragment {
  const { sql } = source;
  const rule = TRANSITIONS[write.transition];
  const from = write.expect ?? rule.from;
  const id = sql.expr('id') as string;
  const ids = Array.isArray(write.id) ? (write.id as readonly TaskId[]) : [write.id as TaskId];
  const where = and([
    ids.length === 1
      ? { sql: `${id} = ?`, params: [...ids] }
      : { sql: `${id} IN (${placeholders(ids)})`, params: [...ids] },
    sql.statusIn(from),
    write.fence ? fenceWhere(sql, write.fence) : { sql: '1=1', params: [] },
  ]);
  if (
    rule.to === 'success' &&
    sql.rawStatus('success') === undefined &&
    sql.profile.status.kind === 'column'
  ) {
    return { sql: `DELETE FROM ${sql.table} WHERE ${where.sql}`, params: where.params };
  }
  if (sql.profile.status.kind !== 'column') {
    throw new TaskreconError(`profile ${sql.profile.name} has no status column to write`, {
      code: 'PROFILE_CAPABILITY',
      hint: 'Use `taskrecon compensate` for failed-job tables; Laravel runs its own jobs table.',
    });
  }
  const set: Fragment[] = [
    { sql: `${sql.dialect.quoteId(sql.profile.status.column)} = ?`, params: [targetValue(sql, rule.to)] },
  ];
  const attempts = sql.expr('attempts');
  if (write.attempts !== undefined && attempts)
    set.push({ sql: `${attempts} = ?`, params: [write.attempts] });
  const nrt = sql.expr('nextRetryAt');
  if (write.nextRetryAt !== undefined && nrt) {
    const type = sql.timeTypes.nextRetryAt ?? 'datetime';
    set.push(
      write.nextRetryAt === 'now'
        ? { sql: `${nrt} = ${sql.nowOf('nextRetryAt')}`, params: [] }
        : { sql: `${nrt} = ${sql.dialect.epochParam(type)}`, params: [write.nextRetryAt] },
    );
  }
  const lastError = sql.expr('lastError');
  if (write.lastError !== undefined && lastError) {
    set.push({
      sql: `${lastError} = ?`,
      params: [write.lastError === null ? null : truncateError(write.lastError, lastErrorLimit(source))],
    });
  }
  const updatedAt = sql.expr('updatedAt');
  if (updatedAt) set.push({ sql: `${updatedAt} = ${sql.nowOf('updatedAt')}`, params: [] });
  return {
    sql: `UPDATE ${sql.table} SET ${set.map((s) => s.sql).join(', ')} WHERE ${where.sql}`,
    params: [...set.flatMap((s) => s.params), ...where.params],
  };
}

/**
 * Applies one transition to one row.
 * In: the transition, the row id(s), the expected state (and fence), the new field values.
 * Out: rows changed — one per id, or 0 for a row not (any longer) in the expected state/claim.
 * Side effects: one UPDATE (or DELETE, see transitionStatement) on the task table, on `q`
 * (the database or the caller's transaction, where an audit row may be written alongside).
 */
export async function applyTransition(
  q: Queryable,
  source: BoundSource,
  write: TransitionWrite,
): Promise<number> {
  const statement = transitionStatement(source, write);
  const result = await q.execute(statement.sql, statement.params);
  return result.affectedRows;
}

/**
 * Marks many claimed tasks successful at once — claimed together, so they share one fence.
 * In: ids, the fence of their claim. Out: rows changed (fewer than ids.length = lost races).
 * Side effects: one UPDATE (or DELETE for tables without a success status).
 */
export async function succeedClaimed(
  q: Queryable,
  source: BoundSource,
  ids: readonly TaskId[],
  fence: ClaimFence,
): Promise<number> {
  if (ids.length === 0) return 0;
  return applyTransition(q, source, { transition: 'succeed', id: ids, fence });
}
