import type { Dialect } from '../dialect.js';
import type { Db, Queryable } from '../types.js';

/**
 * What diff reads from the catalogue about a business table, and the probes that check a rule
 * before any chunk is walked. All read only.
 */

export interface KeyColumn {
  name: string;
  dataType: string;
  nullable: boolean;
  /** The column's collation (MariaDB/MySQL), or SQLite's declared COLLATE, or null (binary / not text). */
  collation: string | null;
}

/**
 * The collation of a column.
 * In: table, column. Out: the collation name, or null. Reads the catalogue.
 */
export async function columnCollation(db: Db, table: string, column: string): Promise<string | null> {
  return db.engine.columnCollation(db, table, column);
}

/**
 * The single integer primary-key column of a table, if it has one (chunkable by ranges).
 * In: table. Out: column name or undefined. Reads the catalogue.
 */
export async function integerPrimaryKey(db: Db, table: string): Promise<string | undefined> {
  return db.engine.integerPrimaryKey(db, table);
}

/** The business table and its key column as the business database quotes them. */
export function businessRefs(dialect: Dialect, table: string, key: string): { table: string; key: string } {
  return { table: dialect.quoteId(table), key: dialect.quoteId(key) };
}

/**
 * Checks that a `where` fragment runs on the business table (read-only: a write in it fails here).
 * In: the quoted table, the fragment. Out: nothing; throws the database's error. Reads up to one row.
 */
export async function probeWhere(q: Queryable, tableSql: string, where: string): Promise<void> {
  await q.query(`SELECT 1 FROM ${tableSql} WHERE (${where}) LIMIT 1`);
}

/**
 * Whether any task of a biz type exists.
 * In: the task table, the biz type column expression, the biz type. Out: true/false. One index probe.
 */
export async function bizTypeHasTasks(
  q: Queryable,
  tableSql: string,
  bizTypeSql: string,
  bizType: string,
): Promise<boolean> {
  const rows = await q.query(`SELECT 1 AS one FROM ${tableSql} WHERE ${bizTypeSql} = ? LIMIT 1`, [bizType]);
  return rows.length > 0;
}
