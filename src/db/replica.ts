import type { Db, Row } from './types.js';

/** What a read replica says about how far behind its primary it is. */
export interface ReplicaLag {
  /** Seconds_Behind_Master; null when replication is stopped or the server does not know. */
  lagSeconds: number | null;
  /** Whether both replication threads run. */
  running: boolean;
  /** Whether the server is a replica at all (it has a replication source configured). */
  isReplica: boolean;
  /** Why the lag is unknown, in words, when it is. */
  reason: string | null;
}

const text = (row: Row | undefined, ...keys: string[]): string | null => {
  for (const key of keys) {
    const v = row?.[key];
    if (v !== undefined && v !== null && v !== '') return String(v);
  }
  return null;
};

/**
 * The replica's lag. `SHOW REPLICA STATUS` (MariaDB ≥ 10.5, MySQL ≥ 8.0.22), else `SHOW SLAVE STATUS`.
 * In: a connection to the replica. Out: its lag. Reads only; needs REPLICATION CLIENT (SLAVE MONITOR).
 * SQLite has no replication: not a replica.
 */
export async function replicaLag(db: Db): Promise<ReplicaLag> {
  if (db.dialect.name !== 'mysql') {
    return { lagSeconds: null, running: false, isReplica: false, reason: 'SQLite has no replication' };
  }
  let rows: Row[];
  try {
    rows = await db.query<Row>('SHOW REPLICA STATUS');
  } catch {
    try {
      rows = await db.query<Row>('SHOW SLAVE STATUS');
    } catch (error) {
      const message = (error as Error).message;
      return {
        lagSeconds: null,
        running: false,
        isReplica: false,
        reason: `cannot read the replication status (${message}); grant REPLICATION CLIENT (MariaDB: SLAVE MONITOR)`,
      };
    }
  }
  const row = rows[0];
  if (!row) {
    return {
      lagSeconds: null,
      running: false,
      isReplica: false,
      reason: 'the server is not a replica (no replication source configured)',
    };
  }
  const io = text(row, 'Replica_IO_Running', 'Slave_IO_Running');
  const sqlThread = text(row, 'Replica_SQL_Running', 'Slave_SQL_Running');
  const running = io === 'Yes' && sqlThread === 'Yes';
  const behind = text(row, 'Seconds_Behind_Source', 'Seconds_Behind_Master');
  const lagSeconds = behind === null ? null : Number(behind);
  let reason: string | null = null;
  if (lagSeconds === null) {
    reason = running
      ? 'the replica does not know its lag'
      : `replication is stopped (IO thread: ${io ?? 'unknown'}, SQL thread: ${sqlThread ?? 'unknown'}): the replica's data may be any age`;
  }
  return { lagSeconds, running, isReplica: true, reason };
}

/** A sentence for stderr about figures read from a replica. */
export function replicaNote(display: string, lag: ReplicaLag): string {
  if (lag.lagSeconds !== null) {
    return lag.lagSeconds > 0
      ? `figures read from the replica ${display}, which is ${lag.lagSeconds}s behind the primary: they are up to ${lag.lagSeconds}s old`
      : `figures read from the replica ${display} (no replication lag)`;
  }
  return `figures read from the replica ${display}; its lag is unknown: ${lag.reason ?? 'no status'}`;
}
