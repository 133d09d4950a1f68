import type { SqliteDsn } from '../../dsn.js';
import type { Engine } from '../types.js';
import { sqliteDialect } from './dialect.js';
import {
  sqliteColumnCollation,
  sqliteIntegerPrimaryKey,
  sqliteIndexOnly,
  sqliteReadPlan,
  sqliteReplicaLag,
  sqliteServerClock,
  sqliteWithReadOnly,
} from './server.js';

/**
 * SQLite, the embedded engine (the sandbox of `demo` and `drill`): one file, one writer at a time
 * (BEGIN IMMEDIATE), no zones, no replication and no statement time limit.
 */
export const sqliteEngine: Engine = {
  name: 'sqlite',
  dialect: sqliteDialect,
  embedded: true,
  clockText: (clock, skewText) => `database clock ${clock.nowEpoch} (${clock.utcNow} UTC), ${skewText}`,
  defaultPort: null,
  // One writer holds the whole database: claims never need SKIP LOCKED.
  mayProbeSkipLocked: false,
  async open(dsn, options) {
    // better-sqlite3's native module is loaded only when a SQLite DSN is opened.
    const { openSqlite } = await import('./db.js');
    return openSqlite(dsn as SqliteDsn, { create: options.create });
  },
  withReadOnly: sqliteWithReadOnly,
  versionVerdict: (version) => ({ status: 'ok', message: `SQLite ${version} (embedded)`, hint: null }),
  skipLockedVerdict: () => ({
    status: 'ok',
    message: 'not needed: SQLite has one writer at a time, so claims take BEGIN IMMEDIATE instead',
    hint: null,
  }),
  serverClock: sqliteServerClock,
  replicaLag: sqliteReplicaLag,
  readPlan: sqliteReadPlan,
  // No wire to read: the NDJSON lists are read row by row.
  listReadAhead: false,
  indexOnly: sqliteIndexOnly,
  // An embedded file is never a shared primary: nothing is ever held back from a full scan.
  estimatedRows: async () => 0,
  // The planner weighs an index walk against a sort by itself.
  primaryKeyWalk: async () => undefined,
  // No server: no idle connection is ever closed.
  idleTimeout: async () => null,
  columnCollation: sqliteColumnCollation,
  integerPrimaryKey: sqliteIntegerPrimaryKey,
  // No vacuum horizon: SQLite rewrites rows in place and one writer holds the file at a time.
  tableBloat: async () => null,
  longTransactions: async () => null,
  // DATETIME text is UTC here; there is no instant type to change it to.
  wallClockToInstant: () => null,
  // EXPLAIN QUERY PLAN's rows are a readable table as they are.
  planLines: () => null,
};
