import type { KeyHashFunction } from '../core/diff-keys.js';
import { isSimpleJsonPath } from '../core/json-path.js';
import type { TimeType } from '../core/task.js';

/**
 * The DDL of the tables taskrecon can create, in the engine's own syntax; each returns the
 * statements in order. `t` is the table name already quoted; `table` the bare name (for index names).
 */
export interface DialectDdl {
  asyncTask(t: string, table: string): string[];
  jobRetries(t: string, table: string): string[];
  audit(t: string): string[];
  notify(t: string): string[];
  alertClaim(t: string): string[];
  queueSnapshot(t: string): string[];
  /** The write-ahead intents of writes that span the database and a broker. */
  intent(t: string): string[];
  /** The markers a failed-job re-push leaves in a queue table's own database (another database). */
  pushMarker(t: string): string[];
  ack(t: string): string[];
  /** The drills' effect table and processed-event table (names fixed by the caller). */
  referenceEffect(effect: string, processed: string): string[];
}

/**
 * The SQL text that differs between engines (each engine's object is in `db/engines/<engine>/`).
 * Every time value is read as epoch seconds and every cutoff is bound as epoch seconds converted
 * on the server side, so that a JS Date is never bound as a DATETIME and the client's time zone
 * never matters.
 */
/** Whether a SQL expression is exactly this column, quoted as the dialect quotes it. */
export function isColumn(dialect: Dialect, expr: string, column: string): boolean {
  return expr === dialect.quoteId(column);
}

/** The shape of a page key (Dialect.pageKeyForm). */
export type PageKeyForm = 'integer' | 'decimal' | 'time' | 'stored';

export interface Dialect {
  quoteId(identifier: string): string;
  /** An expression giving the column as epoch seconds (NULL stays NULL). */
  epochOf(columnSql: string, type: TimeType): string;
  /**
   * As epochOf, with the column's fraction of a second kept (a number with decimals): what tells a
   * failure from an audit row written in the same second.
   */
  exactEpochOf(columnSql: string, type: TimeType): string;
  /** A placeholder expression comparable with a column of this type, bound with epoch seconds. */
  epochParam(type: TimeType): string;
  /**
   * An expression giving the column's exact value as a keyset page key: every fraction of a
   * second kept, so a page can start strictly after the last row of the one before in the column's
   * own order. Selected beside a list's rows only; bound back through `pageKeyParam`.
   */
  pageKeyOf(columnSql: string, type: TimeType): string;
  /** A placeholder comparable with a column of this type, bound with a value `pageKeyOf` gave. */
  pageKeyParam(type: TimeType): string;
  /**
   * What a `pageKeyOf` value looks like, so a key that came back from outside (a console link) can
   * be checked before it is bound: 'integer' whole epoch seconds (a unix column), 'decimal' epoch
   * seconds with a fraction, 'time' ISO date-time text, 'stored' time text or a decimal (the
   * column's value as stored).
   */
  pageKeyForm(type: TimeType): PageKeyForm;
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
  /**
   * A secondary index ends with the row's primary key without naming it (InnoDB; SQLite's rowid),
   * so `ORDER BY next_retry_time, id` reads in index order from `(status, next_retry_time)`.
   * Where it does not (PostgreSQL), the scan index names the id.
   */
  indexesEndWithPrimaryKey: boolean;
  /**
   * Index names are unique per table (MySQL), not per schema (PostgreSQL) or database (SQLite):
   * where they are not, the indexes doctor recommends are named after their table, so the same
   * recommendation for two tables of one schema does not collide.
   */
  indexNamesPerTable: boolean;
  /**
   * How the merge walk of a same-server diff compares keys in the client, or null where it cannot
   * merge: `collation` — each key's collation weight (`WEIGHT_STRING`), keys read in index order;
   * `bytes` — keys compared byte-wise, text read in `COLLATE "C"` order with its UTF-8 bytes as
   * the weight and integers in numeric order.
   */
  mergeKeys: 'collation' | 'bytes' | null;
  /** The weight the merge walk compares a key by (see mergeKeys), as a SELECT expression. */
  mergeWeight(keySql: string, isInt: boolean): string;
  /** The ORDER BY expression that reads keys in the order of their weights. */
  mergeOrder(keySql: string, isInt: boolean): string;
  /**
   * The key hashes the server computes in SQL (core/diff-keys.ts), preferred first; empty where
   * the client hashes the rows it reads.
   */
  keyHashes: readonly KeyHashFunction[];
  /**
   * Hash `fn` (one of keyHashes) of a text expression's UTF-8 bytes, as an unsigned 32-bit
   * integer; `utf8`: the text is stored as UTF-8 already (no conversion needed).
   */
  keyHashSql(fn: KeyHashFunction, textSql: string, utf8: boolean): string;
  /** A text expression in lower case, every script folded (as JavaScript's toLowerCase), whatever its collation. */
  lowerCase(textSql: string): string;
  /** Integer division of two non-negative integer expressions. */
  intDiv(dividend: string, divisor: string): string;
  /**
   * The digest of a range of keys (a text expression, as stored) as a select list: `n` keys and
   * two sums of hashes `s` and `x`, each as exact decimal text or a number.
   */
  keyRangeDigest(textSql: string): string;
  /** Several connections read the same database at once (a file database serialises them: one is enough). */
  parallelReads: boolean;
  /** Error codes of a lock conflict (deadlock, lock-wait timeout) after which a short transaction is retried. */
  lockConflictCodes: readonly string[];
  /** A key as text (to compare a text key with an integer key). */
  castText(sql: string): string;
  /** A key as a signed integer (NULL or 0 where the text is not an integer's). */
  castInt(sql: string): string;
  /** The INSERT verb that skips a row whose key exists (`INSERT IGNORE`, `INSERT OR IGNORE`). */
  insertIgnore: string;
  /**
   * The operator of a text search (`--error-like`, the console's "contains"): case-insensitive for
   * ASCII on every engine, as MySQL's default collations and SQLite's LIKE are (`ILIKE` on PostgreSQL).
   */
  textLike: string;
  /** An INSERT that does nothing on a key conflict: its verb and the clause after VALUES (…). */
  insertUnlessConflict: { verb: string; suffix: string };
  /** The audit log's `created_at` (millisecond precision) as epoch seconds with milliseconds. */
  auditEpoch(columnSql: string): string;
  /** A placeholder comparable with the audit log's bare `created_at`, bound with epoch seconds. */
  auditEpochParam: string;
  /**
   * `ALTER TABLE … MODIFY` a column to a new definition, terminated; null where the engine cannot
   * change a column in place (a table rebuild is needed).
   */
  modifyColumn(table: string, column: string, definition: string): string | null;
  /** A UNIQUE key named `name` on one column of an existing table, terminated, in the engine's syntax. */
  addUniqueKey(table: string, name: string, column: string): string;
  /** The DDL of the tables taskrecon can create. */
  ddl: DialectDdl;
}

/** A simple JSON path (`$.a.b`, `$.a[0]`), checked, for a dialect's `jsonText`. */
export function checkedPath(path: string): string {
  if (!isSimpleJsonPath(path)) throw new Error(`unsafe JSON path ${path}`);
  return path;
}

/** Whether the server hashes keys in SQL (else the client hashes the rows it reads). */
export function hashesInSql(dialect: Dialect): boolean {
  return dialect.keyHashes.length > 0;
}
