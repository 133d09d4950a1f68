import { QUEUE_SNAPSHOT_TABLE } from '../ddl.js';
import { placeholders } from '../task-sql.js';
import type { Db, Row } from '../types.js';

/**
 * Statements on `taskrecon_queue_snapshot`: one row per queue per `queues` run. Times are epoch
 * seconds of the run, bound as numbers.
 */

export interface SnapshotRow {
  broker: string;
  queue: string;
  depth: number;
  ready: number;
  atEpoch: number;
}

/**
 * Whether the table exists.
 * In: the connection. Out: true/false. Reads the catalogue only.
 */
export async function snapshotTableExists(db: Db): Promise<boolean> {
  return (await db.columns(QUEUE_SNAPSHOT_TABLE)) !== undefined;
}

/**
 * Appends one run's snapshots.
 * In: rows. Out: nothing. Side effect: one multi-row INSERT.
 */
export async function insertSnapshots(db: Db, rows: readonly SnapshotRow[]): Promise<void> {
  if (rows.length === 0) return;
  const t = db.dialect.quoteId(QUEUE_SNAPSHOT_TABLE);
  const row = `(${placeholders([1, 2, 3, 4, 5])})`;
  await db.execute(
    `INSERT INTO ${t} (broker, queue, depth, ready, at_epoch) VALUES ${rows.map(() => row).join(', ')}`,
    rows.flatMap((r) => [r.broker, r.queue, r.depth, r.ready, Math.floor(r.atEpoch)]),
  );
}

/**
 * The newest snapshot of each queue of a broker taken at or before `cutoff`.
 * In: broker, cutoff epoch. Out: one row per queue. Reads only (broker, queue, at_epoch index).
 */
export async function selectAnchors(db: Db, broker: string, cutoff: number): Promise<SnapshotRow[]> {
  const t = db.dialect.quoteId(QUEUE_SNAPSHOT_TABLE);
  const rows = await db.query<Row>(
    `SELECT s.queue AS queue, s.depth AS depth, s.ready AS ready, s.at_epoch AS atEpoch
       FROM ${t} s
       JOIN (SELECT queue, MAX(at_epoch) AS m FROM ${t} WHERE broker = ? AND at_epoch <= ? GROUP BY queue) x
         ON s.queue = x.queue AND s.at_epoch = x.m
      WHERE s.broker = ?`,
    [broker, Math.floor(cutoff), broker],
  );
  return rows.map((r) => ({
    broker,
    queue: String(r.queue),
    depth: Number(r.depth),
    ready: Number(r.ready),
    atEpoch: Number(r.atEpoch),
  }));
}

/**
 * The smallest and largest depth of each queue of a broker after `cutoff`.
 * In: broker, cutoff epoch. Out: one row per queue. Reads only.
 */
export async function selectDepthRangeAfter(
  db: Db,
  broker: string,
  cutoff: number,
): Promise<Array<{ queue: string; lo: number; hi: number }>> {
  const t = db.dialect.quoteId(QUEUE_SNAPSHOT_TABLE);
  const rows = await db.query<Row>(
    `SELECT queue, MIN(depth) AS lo, MAX(depth) AS hi FROM ${t} WHERE broker = ? AND at_epoch > ? GROUP BY queue`,
    [broker, Math.floor(cutoff)],
  );
  return rows.map((r) => ({ queue: String(r.queue), lo: Number(r.lo), hi: Number(r.hi) }));
}

/**
 * The `n` newest snapshots of one queue, newest first.
 * In: broker, queue, n. Out: up to n rows. Reads only (index, backwards).
 */
export async function selectRecent(db: Db, broker: string, queue: string, n: number): Promise<SnapshotRow[]> {
  const t = db.dialect.quoteId(QUEUE_SNAPSHOT_TABLE);
  const rows = await db.query<Row>(
    `SELECT depth, ready, at_epoch AS atEpoch FROM ${t} WHERE broker = ? AND queue = ? ORDER BY at_epoch DESC LIMIT ${Math.trunc(n)}`,
    [broker, queue],
  );
  return rows.map((r) => ({
    broker,
    queue,
    depth: Number(r.depth),
    ready: Number(r.ready),
    atEpoch: Number(r.atEpoch),
  }));
}

/**
 * Deletes a broker's snapshots older than `before` (taskrecon's own bookkeeping, never audit rows).
 * In: broker, epoch. Out: rows deleted. Side effect: one DELETE.
 */
export async function pruneSnapshots(db: Db, broker: string, before: number): Promise<number> {
  const t = db.dialect.quoteId(QUEUE_SNAPSHOT_TABLE);
  const result = await db.execute(`DELETE FROM ${t} WHERE broker = ? AND at_epoch < ?`, [
    broker,
    Math.floor(before),
  ]);
  return result.affectedRows;
}
