import type { ReplicaLag } from '../../db/replica.js';
import { check, type DoctorCheck } from './check.js';

/** A replica further behind than this gives figures a person would call stale for a cron check (seconds). */
export const REPLICA_LAG_WARN_SECONDS = 60;

/**
 * The read replica's lag: ok when it replicates within REPLICA_LAG_WARN_SECONDS, warn when
 * further behind, fail when replication is stopped or its lag unknown (its figures may be any age).
 */
export function replicaCheck(display: string, lag: ReplicaLag): DoctorCheck {
  const name = 'read replica';
  if (!lag.isReplica) {
    return check(
      name,
      'fail',
      `${display} is given as the read replica, but ${lag.reason ?? 'it reports no replication status'}`,
      'Point --read-db (readDb:) at a replica of --db, or drop it to read the primary.',
    );
  }
  if (lag.lagSeconds === null) {
    return check(
      name,
      'fail',
      `replica ${display}: lag unknown — ${lag.reason ?? 'no Seconds_Behind_Master'}`,
      'Start replication on the replica (MySQL: START REPLICA, then the error columns of SHOW REPLICA STATUS; PostgreSQL: its primary_conninfo, pg_stat_wal_receiver and its log); until then read the primary.',
    );
  }
  if (lag.lagSeconds > REPLICA_LAG_WARN_SECONDS) {
    return check(
      name,
      'warn',
      `replica ${display} is ${lag.lagSeconds}s behind the primary: scan and report figures read from it are that old`,
      'Find why the replica lags (long transactions on the primary, a slow replica), or read the primary.',
    );
  }
  return check(name, 'ok', `replica ${display} is ${lag.lagSeconds}s behind the primary`);
}
