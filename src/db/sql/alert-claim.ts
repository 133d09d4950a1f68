import { ALERT_CLAIM_TABLE, alertClaimDdl } from '../ddl.js';
import type { Db } from '../types.js';

/**
 * The sweep's alert claims in taskrecon_alert_claim: one row per (task table, job identity), taken
 * before the alert is sent, so that exactly one of several sweeps sends it.
 */

/**
 * Creates taskrecon_alert_claim if it is missing (a database set up before it existed).
 * In: the connection. Side effect: CREATE TABLE IF NOT EXISTS.
 */
export async function ensureAlertClaimTable(db: Db): Promise<void> {
  if (await db.columns(ALERT_CLAIM_TABLE)) return;
  try {
    for (const statement of alertClaimDdl(db.dialect)) await db.execute(statement);
  } catch (error) {
    // Two sweeps creating it at once: PostgreSQL's IF NOT EXISTS can still collide; the table is there.
    if (!(await db.columns(ALERT_CLAIM_TABLE))) throw error;
  }
}

/**
 * Claims the alert of each identity for `runId`: a new row under the table's primary key, or an
 * unsent claim older than `staleBefore` (a sweep killed before its message went out) taken over.
 * A claim another sweep holds (sent, or unsent and fresh) is left alone.
 * In: task table, identities, run id, now and the stale cutoff (epoch seconds, database clock).
 * Out: the identities this run claimed. Side effect: one INSERT (and at most one UPDATE) per identity,
 * each its own statement, so a concurrent claimer sees it at once.
 */
export async function claimAlerts(
  db: Db,
  taskTable: string,
  identities: readonly string[],
  runId: string,
  nowEpoch: number,
  staleBefore: number,
): Promise<Set<string>> {
  const t = db.dialect.quoteId(ALERT_CLAIM_TABLE);
  const { verb, suffix } = db.dialect.insertUnlessConflict;
  const claimed = new Set<string>();
  for (const identity of identities) {
    const inserted = await db.execute(
      `${verb} ${t} (task_table, event_id, run_id, claimed_at, sent) VALUES (?, ?, ?, ?, 0)${suffix}`,
      [taskTable, identity, runId, nowEpoch],
    );
    if (inserted.affectedRows === 1) {
      claimed.add(identity);
      continue;
    }
    const taken = await db.execute(
      `UPDATE ${t} SET run_id = ?, claimed_at = ?
        WHERE task_table = ? AND event_id = ? AND sent = 0 AND claimed_at < ?`,
      [runId, nowEpoch, taskTable, identity, staleBefore],
    );
    if (taken.affectedRows === 1) claimed.add(identity);
  }
  return claimed;
}

/**
 * Settles this run's claims: `sent` when a target took the message, otherwise deleted so that the
 * next sweep alerts the jobs again. In: task table, identities, run id, whether it was delivered.
 * Side effect: one UPDATE or DELETE per 500 identities, only rows this run holds.
 */
export async function settleAlertClaims(
  db: Db,
  taskTable: string,
  identities: readonly string[],
  runId: string,
  delivered: boolean,
): Promise<void> {
  const t = db.dialect.quoteId(ALERT_CLAIM_TABLE);
  for (let i = 0; i < identities.length; i += 500) {
    const chunk = identities.slice(i, i + 500);
    const where = `task_table = ? AND run_id = ? AND sent = 0 AND event_id IN (${chunk.map(() => '?').join(', ')})`;
    await db.execute(
      delivered ? `UPDATE ${t} SET sent = 1 WHERE ${where}` : `DELETE FROM ${t} WHERE ${where}`,
      [taskTable, runId, ...chunk],
    );
  }
}
