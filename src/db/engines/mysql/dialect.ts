import { checkedPath, type Dialect } from '../../dialect.js';
import { quoteMysqlId, mysqlDdl } from './ddl.js';

/** MySQL/MariaDB's SQL text: backquotes, UNIX_TIMESTAMP/FROM_UNIXTIME, JSON_EXTRACT, CRC32 (and MD5) hashing, WEIGHT_STRING. */
export const mysqlDialect: Dialect = {
  quoteId: quoteMysqlId,
  epochOf: (col, type) => (type === 'unix' ? col : `UNIX_TIMESTAMP(${col})`),
  epochParam: (type) => (type === 'unix' ? '?' : 'FROM_UNIXTIME(?)'),
  // UNIX_TIMESTAMP keeps a DATETIME(n)'s fraction already.
  exactEpochOf: (col, type) => (type === 'unix' ? col : `UNIX_TIMESTAMP(${col})`),
  // UNIX_TIMESTAMP of a DATETIME(n)/TIMESTAMP(n) keeps its n digits of fraction (a DECIMAL, read
  // as text), and FROM_UNIXTIME of that text gives the same value back: the epoch is the exact key.
  pageKeyOf: (col, type) => (type === 'unix' ? col : `UNIX_TIMESTAMP(${col})`),
  pageKeyParam: (type) => (type === 'unix' ? '?' : 'FROM_UNIXTIME(?)'),
  pageKeyForm: (type) => (type === 'unix' ? 'integer' : 'decimal'),
  nowOf: (type) => (type === 'unix' ? 'UNIX_TIMESTAMP()' : 'NOW()'),
  nowEpoch: 'UNIX_TIMESTAMP()',
  // MySQL 8 raises an error on JSON_EXTRACT of text that is not JSON (MariaDB returns NULL), and
  // failed-job payloads are LONGTEXT that may hold anything: such a row reads as NULL, never an error.
  // JSON_UNQUOTE turns a JSON null into the text 'null': JSON_TYPE keeps it NULL, as SQLite reads it.
  jsonText: (col, path) => {
    const value = `JSON_EXTRACT(${col}, '${checkedPath(path)}')`;
    return `CASE WHEN JSON_VALID(${col}) AND JSON_TYPE(${value}) <> 'NULL' THEN JSON_UNQUOTE(${value}) END`;
  },
  prefix: (col, length) => `LEFT(${col}, ${Math.trunc(length)})`,
  explain: 'EXPLAIN',
  forUpdate: ' FOR UPDATE',
  drivingJoin: 'STRAIGHT_JOIN',
  indexesEndWithPrimaryKey: true,
  indexNamesPerTable: true,
  mergeKeys: 'collation',
  mergeWeight: (key) => `WEIGHT_STRING(${key})`,
  mergeOrder: (key) => key,
  keyHashes: ['crc32', 'md5'],
  keyHashSql: (fn, text, utf8) => {
    const bytes = utf8 ? text : `CONVERT(${text} USING utf8mb4)`;
    return fn === 'crc32' ? `CRC32(${bytes})` : `CAST(CONV(LEFT(MD5(${bytes}), 8), 16, 10) AS UNSIGNED)`;
  },
  lowerCase: (text) => `LOWER(${text})`,
  // DIV divides integers; FLOOR(a / b) would divide in DECIMAL, row by row.
  intDiv: (a, b) => `${a} DIV ${b}`,
  keyRangeDigest: (text) =>
    `COUNT(*) AS n, COALESCE(SUM(CRC32(${text})), 0) AS s, COALESCE(BIT_XOR(CRC32(${text})), 0) AS x`,
  parallelReads: true,
  lockConflictCodes: ['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT'],
  castText: (sql) => `CAST(${sql} AS CHAR)`,
  castInt: (sql) => `CAST(${sql} AS SIGNED)`,
  insertIgnore: 'INSERT IGNORE',
  textLike: 'LIKE',
  insertUnlessConflict: { verb: 'INSERT IGNORE INTO', suffix: '' },
  // The audit log stores TIMESTAMP(3).
  auditEpoch: (col) => `UNIX_TIMESTAMP(${col})`,
  auditEpochParam: 'FROM_UNIXTIME(?)',
  ddl: mysqlDdl,
  addUniqueKey: (table, name, column) =>
    `ALTER TABLE ${quoteMysqlId(table)} ADD UNIQUE KEY ${quoteMysqlId(name)} (${quoteMysqlId(column)});`,
  modifyColumn: (table, column, definition) =>
    `ALTER TABLE ${mysqlDialect.quoteId(table)} MODIFY ${mysqlDialect.quoteId(column)} ${definition};`,
};
