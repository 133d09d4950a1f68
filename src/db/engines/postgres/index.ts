import type { PostgresDsn } from '../../dsn.js';
import type { Engine } from '../types.js';
import { postgresDialect } from './dialect.js';
import {
  postgresColumnCollation,
  postgresEstimatedRows,
  postgresIdleTimeout,
  postgresIntegerPrimaryKey,
  postgresReplicaLag,
  postgresServerClock,
  postgresSkipLockedVerdict,
  postgresVersionVerdict,
  postgresWithReadOnly,
} from './server.js';
import { postgresIndexOnly, postgresPlanLines, postgresReadPlan } from './plans.js';
import { postgresLongTransactions, postgresTableBloat } from './vacuum.js';
import { postgresWallClockToInstant } from './ddl.js';

/**
 * PostgreSQL 13+: a pool of sessions pinned to one TimeZone and READ COMMITTED; every read runs
 * in its own short transaction under SET LOCAL statement_timeout.
 */
export const postgresEngine: Engine = {
  name: 'postgres',
  dialect: postgresDialect,
  embedded: false,
  clockText: (clock, skewText) =>
    `server now() ${clock.nowEpoch} (${clock.now} ${clock.sessionZone ?? ''}, ${clock.utcNow} UTC), ${skewText}`,
  defaultPort: 5432,
  mayProbeSkipLocked: true,
  async open(dsn, options) {
    // pg is imported when first needed, so a MySQL or SQLite run never loads it.
    const { openPostgres } = await import('./db.js');
    return openPostgres(dsn as PostgresDsn, options);
  },
  withReadOnly: postgresWithReadOnly,
  versionVerdict: postgresVersionVerdict,
  skipLockedVerdict: postgresSkipLockedVerdict,
  serverClock: postgresServerClock,
  replicaLag: postgresReplicaLag,
  readPlan: postgresReadPlan,
  // COPY's stream is the slower side (decoding it takes the client's CPU): a second stream only
  // competes for it, and its buffers pass 150 MB of RSS (400k rows: 0.41× psql against 0.60×).
  listReadAhead: false,
  indexOnly: postgresIndexOnly,
  estimatedRows: postgresEstimatedRows,
  // The planner weighs an index walk against a sort by itself.
  primaryKeyWalk: async () => undefined,
  idleTimeout: postgresIdleTimeout,
  columnCollation: postgresColumnCollation,
  integerPrimaryKey: postgresIntegerPrimaryKey,
  tableBloat: postgresTableBloat,
  longTransactions: postgresLongTransactions,
  wallClockToInstant: postgresWallClockToInstant,
  planLines: postgresPlanLines,
};
