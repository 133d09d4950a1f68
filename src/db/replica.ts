import type { ReplicaLag } from './engines/types.js';
import type { Db } from './types.js';

export type { ReplicaLag } from './engines/types.js';

/**
 * The replica's lag, as its engine reads it (an engine without replication: not a replica).
 * In: a connection to the replica. Out: its lag. Reads only.
 */
export async function replicaLag(db: Db): Promise<ReplicaLag> {
  return db.engine.replicaLag(db);
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
