import type { MysqlDsn } from '../../dsn.js';
import type { Engine } from '../types.js';
import { mysqlDialect } from './dialect.js';
import {
  mysqlColumnCollation,
  mysqlEstimatedRows,
  mysqlPrimaryKeyWalk,
  mysqlIndexOnly,
  mysqlIntegerPrimaryKey,
  mysqlReadPlan,
  mysqlReplicaLag,
  mysqlServerClock,
  mysqlWaitTimeout,
  mysqlWithReadOnly,
} from './server.js';
import { mysqlSkipLockedVerdict, mysqlVersionVerdict } from './version.js';

/**
 * MySQL and MariaDB, one engine: they differ in the statement time limit's syntax (chosen by
 * VERSION() when connecting) and in the versions supported. A pool of sessions pinned to one zone
 * and READ COMMITTED.
 */
export const mysqlEngine: Engine = {
  name: 'mysql',
  dialect: mysqlDialect,
  embedded: false,
  clockText: (clock, skewText) =>
    `server UNIX_TIMESTAMP() ${clock.nowEpoch}, ${skewText}; NOW() ${clock.now}, UTC_TIMESTAMP() ${clock.utcNow}`,
  defaultPort: 3306,
  mayProbeSkipLocked: true,
  async open(dsn, options) {
    // mysql2 is imported when first needed, so a SQLite run never loads it.
    const { openMysql } = await import('./db.js');
    return openMysql(dsn as MysqlDsn, options);
  },
  withReadOnly: mysqlWithReadOnly,
  versionVerdict: mysqlVersionVerdict,
  skipLockedVerdict: mysqlSkipLockedVerdict,
  serverClock: mysqlServerClock,
  replicaLag: mysqlReplicaLag,
  readPlan: mysqlReadPlan,
  // A list read through a secondary index costs a row lookup per entry: on a table larger than the
  // buffer pool the server is the slower side (400k of 1M rows: 1.11× `mariadb --quick` read ahead,
  // 0.82× page after page); where the pages sit in the buffer pool it costs nothing measurable.
  listReadAhead: true,
  indexOnly: mysqlIndexOnly,
  estimatedRows: mysqlEstimatedRows,
  primaryKeyWalk: mysqlPrimaryKeyWalk,
  idleTimeout: mysqlWaitTimeout,
  columnCollation: mysqlColumnCollation,
  integerPrimaryKey: mysqlIntegerPrimaryKey,
  // InnoDB purges old row versions in the background: there is no per-table vacuum to fall behind,
  // and no transaction horizon doctor reads.
  tableBloat: async () => null,
  longTransactions: async () => null,
  // DATETIME is the classic task table's time type here; the zone check covers how it is read.
  wallClockToInstant: () => null,
  // EXPLAIN's rows are a readable table as they are.
  planLines: () => null,
};
