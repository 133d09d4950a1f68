import { PUSH_MARKER_TABLE } from '../ddl.js';
import type { Dialect } from '../dialect.js';
import type { Db, Queryable } from '../types.js';

/**
 * Statements on `taskrecon_push_marker`, in the database of a queue table that failed jobs are
 * re-pushed into when it is not the failed-jobs table's own: the marker of a re-push's write-ahead
 * intent, keyed by the run and the intent. The push writes `landed` with the ids it pushed in the
 * same transaction as the jobs; a later run that finds the intent open writes `fenced` unless a
 * marker is there (the primary key lets only one of them in), then reads which it is.
 */

export interface PushMarker {
  state: 'landed' | 'fenced';
  jobs: string[];
}

/** Whether the marker table exists in this database. Reads the catalogue only. */
export async function pushMarkerTableExists(db: Db): Promise<boolean> {
  return (await db.columns(PUSH_MARKER_TABLE)) !== undefined;
}

/**
 * Writes a marker unless one is there (it waits for a marker written by an open transaction).
 * Out: true when this call wrote it. Side effect: at most one INSERT.
 */
export async function insertPushMarker(
  q: Queryable,
  dialect: Dialect,
  runId: string,
  intentId: number,
  state: PushMarker['state'],
  jobs: readonly string[],
): Promise<boolean> {
  const { verb, suffix } = dialect.insertUnlessConflict;
  const c = (name: string) => dialect.quoteId(name);
  const result = await q.execute(
    `${verb} ${c(PUSH_MARKER_TABLE)} (${c('run_id')}, ${c('intent_id')}, ${c('state')}, ${c('jobs')}, ${c('created_epoch')})
     VALUES (?, ?, ?, ?, ${dialect.nowEpoch})${suffix}`,
    [runId, intentId, state, JSON.stringify(jobs)],
  );
  return result.affectedRows === 1;
}

/** The marker of an intent, or undefined. Reads one row. */
export async function selectPushMarker(
  q: Queryable,
  dialect: Dialect,
  runId: string,
  intentId: number,
): Promise<PushMarker | undefined> {
  const c = (name: string) => dialect.quoteId(name);
  const rows = await q.query(
    `SELECT ${c('state')} AS state, ${c('jobs')} AS jobs FROM ${c(PUSH_MARKER_TABLE)}
      WHERE ${c('run_id')} = ? AND ${c('intent_id')} = ?`,
    [runId, intentId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v));
  return {
    state: text(row.state) === 'landed' ? 'landed' : 'fenced',
    jobs: JSON.parse(text(row.jobs)) as string[],
  };
}

/** Removes the marker of a settled intent. Side effect: one DELETE of at most one row. */
export async function deletePushMarker(
  q: Queryable,
  dialect: Dialect,
  runId: string,
  intentId: number,
): Promise<void> {
  const c = (name: string) => dialect.quoteId(name);
  await q.execute(`DELETE FROM ${c(PUSH_MARKER_TABLE)} WHERE ${c('run_id')} = ? AND ${c('intent_id')} = ?`, [
    runId,
    intentId,
  ]);
}
