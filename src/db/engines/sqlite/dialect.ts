import { checkedPath, type Dialect } from '../../dialect.js';
import { quoteSqliteId, sqliteDdl } from './ddl.js';

/** SQLite's SQL text: double quotes, strftime/datetime, json_extract; the client hashes. */
export const sqliteDialect: Dialect = {
  quoteId: quoteSqliteId,
  epochOf: (col, type) => (type === 'unix' ? col : `CAST(strftime('%s', ${col}) AS INTEGER)`),
  epochParam: (type) => (type === 'unix' ? '?' : "datetime(?, 'unixepoch')"),
  exactEpochOf: (col, type) => (type === 'unix' ? col : `((julianday(${col}) - 2440587.5) * 86400.0)`),
  // Times are text (or numbers) compared as stored: the stored value itself is the exact key.
  // strftime('%s') would cut a text time's fraction, and the whole-second text datetime() gives
  // back sorts before every fraction of that second.
  pageKeyOf: (col) => col,
  pageKeyParam: () => '?',
  pageKeyForm: (type) => (type === 'unix' ? 'integer' : 'stored'),
  nowOf: (type) => (type === 'unix' ? "CAST(strftime('%s', 'now') AS INTEGER)" : "datetime('now')"),
  nowEpoch: "CAST(strftime('%s', 'now') AS INTEGER)",
  jsonText: (col, path) =>
    `CASE WHEN json_valid(${col}) THEN json_extract(${col}, '${checkedPath(path)}') END`,
  prefix: (col, length) => `substr(${col}, 1, ${Math.trunc(length)})`,
  explain: 'EXPLAIN QUERY PLAN',
  // BEGIN IMMEDIATE already holds the write lock for the whole transaction.
  forUpdate: '',
  // SQLite's planner never reorders the tables of a CROSS JOIN.
  drivingJoin: 'CROSS JOIN',
  indexesEndWithPrimaryKey: true,
  indexNamesPerTable: false,
  mergeKeys: null,
  mergeWeight: () => {
    throw new Error('SQLite does not merge key indexes');
  },
  mergeOrder: (key) => key,
  // No hash function in SQL: the client hashes the keys it reads.
  keyHashes: [],
  keyHashSql: () => {
    throw new Error('SQLite does not hash in SQL');
  },
  // SQLite's lower() folds ASCII only; the client folds keys itself (it hashes them).
  lowerCase: (text) => `lower(${text})`,
  intDiv: (a, b) => `(${a} / ${b})`,
  keyRangeDigest: () => {
    throw new Error('SQLite does not hash in SQL');
  },
  parallelReads: false,
  // BEGIN IMMEDIATE waits for the write lock (busy timeout) instead of conflicting.
  lockConflictCodes: [],
  castText: (sql) => `CAST(${sql} AS TEXT)`,
  castInt: (sql) => `CAST(${sql} AS INTEGER)`,
  insertIgnore: 'INSERT OR IGNORE',
  textLike: 'LIKE',
  insertUnlessConflict: { verb: 'INSERT INTO', suffix: ' ON CONFLICT DO NOTHING' },
  // The audit log stores ISO-8601 text with milliseconds and `Z`.
  auditEpoch: (col) => `((julianday(${col}) - 2440587.5) * 86400.0)`,
  auditEpochParam: `strftime('%Y-%m-%dT%H:%M:%fZ', ?, 'unixepoch')`,
  // SQLite changes a column's type only by rebuilding the table.
  ddl: sqliteDdl,
  modifyColumn: () => null,
  // SQLite adds no constraint to an existing table: a unique index enforces the same.
  addUniqueKey: (table, name, column) =>
    `CREATE UNIQUE INDEX ${quoteSqliteId(name)} ON ${quoteSqliteId(table)} (${quoteSqliteId(column)});`,
};
