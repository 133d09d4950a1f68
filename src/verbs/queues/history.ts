import { store, type SnapshotRow } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';

export type { SnapshotRow };

/** Backlog history: the snapshots of the last 7 days, at most this many rows. */
const HISTORY_SPAN_SECONDS = 7 * 86_400;
const HISTORY_ROWS = 20_000;

/**
 * The queue snapshots `queues` recorded in `db` over the last 7 days as of `nowEpoch` (at most
 * 20,000, by broker, queue and time); none when the snapshot table does not exist. Reads only.
 */
export async function snapshotHistory(db: Db, nowEpoch: number): Promise<SnapshotRow[]> {
  return store.state.selectSnapshotsSince(db, nowEpoch - HISTORY_SPAN_SECONDS, HISTORY_ROWS);
}
