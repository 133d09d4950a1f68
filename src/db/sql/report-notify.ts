import type { NotifiedState } from '../../core/report-cooldown.js';
import type { ReportStatus } from '../../core/thresholds.js';
import { NOTIFY_TABLE, notifyDdl } from '../ddl.js';
import type { Db } from '../types.js';

/**
 * The cooldown state of `report --notify` in taskrecon_notify. Statements for one (source, target).
 */

/**
 * Creates taskrecon_notify if it is missing (a database set up before it existed, or without `init`).
 * In: the connection. Side effect: CREATE TABLE IF NOT EXISTS.
 */
export async function ensureNotifyTable(db: Db): Promise<void> {
  if (await db.columns(NOTIFY_TABLE)) return;
  for (const statement of notifyDdl(db.dialect)) await db.execute(statement);
}

/**
 * What was last notified to one target for one source.
 * In: source name, target key. Out: the state, or undefined when never notified. Reads only.
 */
export async function readNotified(
  db: Db,
  source: string,
  target: string,
): Promise<NotifiedState | undefined> {
  const t = db.dialect.quoteId(NOTIFY_TABLE);
  const rows = await db.query<{ status: unknown; fingerprint: unknown; notifiedAt: unknown }>(
    `SELECT status, fingerprint, notified_at AS notifiedAt FROM ${t} WHERE source = ? AND target = ?`,
    [source, target],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    status: String(row.status) as ReportStatus,
    fingerprint: String(row.fingerprint),
    notifiedEpoch: Number(row.notifiedAt),
  };
}

/**
 * Records a notification that was delivered (replacing the previous one), in one transaction.
 * In: source, target key, the state sent. Side effect: DELETE + INSERT of one row.
 */
export async function writeNotified(
  db: Db,
  source: string,
  target: string,
  state: NotifiedState,
): Promise<void> {
  const t = db.dialect.quoteId(NOTIFY_TABLE);
  await db.transaction(async (tx) => {
    await tx.execute(`DELETE FROM ${t} WHERE source = ? AND target = ?`, [source, target]);
    await tx.execute(
      `INSERT INTO ${t} (source, target, status, fingerprint, notified_at) VALUES (?, ?, ?, ?, ?)`,
      [source, target, state.status, state.fingerprint.slice(0, 512), state.notifiedEpoch],
    );
  });
}
