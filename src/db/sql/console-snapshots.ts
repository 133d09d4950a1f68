import { QUEUE_SNAPSHOT_TABLE } from '../ddl.js';
import type { Db, Row } from '../types.js';
import type { SnapshotRow } from './queue-snapshot.js';

/**
 * The queue depth snapshots `queues` recorded since `sinceEpoch`, for the console's backlog history.
 * In: since (epoch), a row cap. Out: rows by broker, queue and time; none when the table does not
 * exist. Reads only (the broker, queue, at_epoch index).
 */
export async function selectSnapshotsSince(db: Db, sinceEpoch: number, cap: number): Promise<SnapshotRow[]> {
  if ((await db.columns(QUEUE_SNAPSHOT_TABLE)) === undefined) return [];
  const t = db.dialect.quoteId(QUEUE_SNAPSHOT_TABLE);
  const rows = await db.query<Row>(
    `SELECT broker, queue, depth, ready, at_epoch AS atEpoch FROM ${t} WHERE at_epoch >= ? ORDER BY broker, queue, at_epoch LIMIT ${Math.trunc(cap)}`,
    [Math.floor(sinceEpoch)],
  );
  return rows.map((r) => ({
    broker: String(r.broker),
    queue: String(r.queue),
    depth: Number(r.depth),
    ready: Number(r.ready),
    atEpoch: Number(r.atEpoch),
  }));
}
