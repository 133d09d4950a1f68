import { isSimpleJsonPath } from '../core/json-path.js';
import type { TimeType } from '../core/task.js';

/**
 * The SQL that differs between MySQL/MariaDB and SQLite, in one place. Every time value is read as
 * epoch seconds and every cutoff is bound as epoch seconds converted on the server side, so that a
 * JS Date is never bound as a DATETIME and the client's time zone never matters.
 */
/** Whether a SQL expression is exactly this column, quoted as the dialect quotes it. */
export function isColumn(dialect: Dialect, expr: string, column: string): boolean {
  return expr === dialect.quoteId(column);
}

export interface Dialect {
  name: 'mysql' | 'sqlite';
  quoteId(identifier: string): string;
  /** An expression giving the column as epoch seconds (NULL stays NULL). */
  epochOf(columnSql: string, type: TimeType): string;
  /** A placeholder expression comparable with a column of this type, bound with epoch seconds. */
  epochParam(type: TimeType): string;
  /** The database's "now" in the column's type, for writes. */
  nowOf(type: TimeType): string;
  /** "now" as epoch seconds, as a SELECT expression. */
  nowEpoch: string;
  /**
   * The value at a JSON path of a JSON/text column, as text; NULL when the text is not JSON, the
   * path is missing or holds JSON null. `path` is a simple path (`$.a.b`, `$.a[0]`), checked.
   */
  jsonText(columnSql: string, path: string): string;
  /** At most `length` characters of a text column. */
  prefix(columnSql: string, length: number): string;
  /** The statement prefix that shows a query's plan instead of running it. */
  explain: string;
  /** Appended to a SELECT inside a transaction to lock the rows it reads ('' where the transaction already holds the database). */
  forUpdate: string;
  /**
   * An inner join that reads its left table first, whatever the statistics say: a chunk of a
   * primary-key range then drives the lookups into the other table, never a scan of it per chunk.
   */
  drivingJoin: string;
  /** The server computes a key's collation weight (`WEIGHT_STRING`), so two key indexes can be merged in the client. */
  collationWeights: boolean;
  /** The server hashes keys and sums digests in SQL (CRC32, BIT_XOR); otherwise the client hashes the rows it reads. */
  serverHashing: boolean;
  /** Several connections read the same database at once (a file database serialises them: one is enough). */
  parallelReads: boolean;
  /** Error codes of a lock conflict (deadlock, lock-wait timeout) after which a short transaction is retried. */
  lockConflictCodes: readonly string[];
}

function checkedPath(path: string): string {
  if (!isSimpleJsonPath(path)) throw new Error(`unsafe JSON path ${path}`);
  return path;
}

export const mysqlDialect: Dialect = {
  name: 'mysql',
  quoteId: (identifier) => '`' + identifier.replace(/`/g, '``') + '`',
  epochOf: (col, type) => (type === 'unix' ? col : `UNIX_TIMESTAMP(${col})`),
  epochParam: (type) => (type === 'unix' ? '?' : 'FROM_UNIXTIME(?)'),
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
  collationWeights: true,
  serverHashing: true,
  parallelReads: true,
  lockConflictCodes: ['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT'],
};

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  quoteId: (identifier) => '"' + identifier.replace(/"/g, '""') + '"',
  epochOf: (col, type) => (type === 'unix' ? col : `CAST(strftime('%s', ${col}) AS INTEGER)`),
  epochParam: (type) => (type === 'unix' ? '?' : "datetime(?, 'unixepoch')"),
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
  collationWeights: false,
  serverHashing: false,
  parallelReads: false,
  // BEGIN IMMEDIATE waits for the write lock (busy timeout) instead of conflicting.
  lockConflictCodes: [],
};
