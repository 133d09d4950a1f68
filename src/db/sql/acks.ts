import { ACK_TABLE, ackDdl } from '../ddl.js';
import type { Db, Queryable, Row } from '../types.js';

/**
 * Statements on `taskrecon_ack`, the acknowledged queue findings. Times are epoch seconds of the
 * database clock, bound as numbers. Rows are inserted and ended (ended_epoch set), never deleted.
 */

export interface AckInsert {
  code: string;
  broker: string;
  /** '' for a finding of the broker itself. */
  queue: string;
  reason: string;
  operator: string;
  createdEpoch: number;
  untilEpoch: number;
  runId: string;
}

export interface AckRow extends AckInsert {
  id: number;
  endedEpoch: number | null;
}

/**
 * Whether the table exists.
 * In: the connection. Out: true/false. Reads the catalogue only.
 */
export async function ackTableExists(db: Db): Promise<boolean> {
  return (await db.columns(ACK_TABLE)) !== undefined;
}

/**
 * Creates taskrecon_ack if it is missing (a database set up before it existed, or without `init`).
 * In: the connection. Side effect: CREATE TABLE IF NOT EXISTS.
 */
export async function ensureAckTable(db: Db): Promise<void> {
  if (await ackTableExists(db)) return;
  for (const statement of ackDdl(db.dialect)) await db.execute(statement);
}

const COLUMNS = `id, code, broker, queue, reason, operator, created_epoch AS createdEpoch,
  until_epoch AS untilEpoch, ended_epoch AS endedEpoch, run_id AS runId`;

function toAck(r: Row): AckRow {
  return {
    id: Number(r.id),
    code: String(r.code),
    broker: String(r.broker),
    queue: String(r.queue),
    reason: String(r.reason),
    operator: String(r.operator),
    createdEpoch: Number(r.createdEpoch),
    untilEpoch: Number(r.untilEpoch),
    endedEpoch: r.endedEpoch === null || r.endedEpoch === undefined ? null : Number(r.endedEpoch),
    runId: String(r.runId),
  };
}

/**
 * Records one acknowledgement; run it on the transaction of its audit row.
 * In: the row. Out: its id. Side effect: one INSERT.
 */
export async function insertAck(tx: Queryable, db: Db, ack: AckInsert): Promise<number> {
  const t = db.dialect.quoteId(ACK_TABLE);
  await tx.execute(
    `INSERT INTO ${t} (code, broker, queue, reason, operator, created_epoch, until_epoch, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    [ack.code, ack.broker, ack.queue, ack.reason, ack.operator, ack.createdEpoch, ack.untilEpoch, ack.runId],
  );
  const rows = await tx.query<Row>(`SELECT id FROM ${t} WHERE run_id = ?`, [ack.runId]);
  return Number(rows[0]?.id);
}

/**
 * Acknowledgements, newest first: the active ones at `nowEpoch` (not ended, until in the future),
 * or every one when `all`.
 * In: now, all. Out: rows. Reads only.
 */
export async function selectAcks(db: Db, nowEpoch: number, all = false): Promise<AckRow[]> {
  const t = db.dialect.quoteId(ACK_TABLE);
  const where = all ? '' : 'WHERE ended_epoch IS NULL AND until_epoch > ?';
  const rows = await db.query<Row>(
    `SELECT ${COLUMNS} FROM ${t} ${where} ORDER BY id DESC`,
    all ? [] : [Math.floor(nowEpoch)],
  );
  return rows.map(toAck);
}

/**
 * One acknowledgement by id.
 * In: id. Out: the row, or undefined. Reads only.
 */
export async function selectAck(tx: Queryable, db: Db, id: number): Promise<AckRow | undefined> {
  const t = db.dialect.quoteId(ACK_TABLE);
  const rows = await tx.query<Row>(`SELECT ${COLUMNS} FROM ${t} WHERE id = ?`, [id]);
  return rows[0] ? toAck(rows[0]) : undefined;
}

/**
 * Ends an active acknowledgement early, guarded on it still being active.
 * In: id, now. Out: rows changed (0: it had ended or expired meanwhile). Side effect: one UPDATE.
 */
export async function endAck(tx: Queryable, db: Db, id: number, nowEpoch: number): Promise<number> {
  const t = db.dialect.quoteId(ACK_TABLE);
  const result = await tx.execute(
    `UPDATE ${t} SET ended_epoch = ? WHERE id = ? AND ended_epoch IS NULL AND until_epoch > ?`,
    [Math.floor(nowEpoch), id, Math.floor(nowEpoch)],
  );
  return result.affectedRows;
}
