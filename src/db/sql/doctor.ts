import type { LongTransaction, ReadPlan, ServerClock, TableBloat } from '../engines/types.js';
import type { Db, Queryable, Row } from '../types.js';

export type { LongTransaction, ServerClock, TableBloat } from '../engines/types.js';

/**
 * The plan of one statement, as the engine's EXPLAIN (MySQL) or EXPLAIN QUERY PLAN (SQLite) rows.
 * In: the statement and its parameters, exactly as the command runs it. Out: plan rows. Runs nothing.
 */
export async function explain(db: Db, sql: string, params: readonly unknown[]): Promise<Row[]> {
  return db.query<Row>(`${db.dialect.explain} ${sql}`, params);
}

/**
 * How many rows hold each stored status value.
 * In: the quoted table and the status column's name. Out: one row per value. Reads the status index (or the table).
 */
export async function statusValueCounts(
  db: Db,
  table: string,
  statusColumnName: string,
): Promise<Array<{ raw: unknown; count: number }>> {
  const statusColumn = db.dialect.quoteId(statusColumnName);
  const rows = await db.query<{ raw: unknown; n: unknown }>(
    `SELECT ${statusColumn} AS raw, COUNT(*) AS n FROM ${table} GROUP BY ${statusColumn}`,
  );
  return rows.map((r) => ({ raw: r.raw, count: Number(r.n) }));
}

/**
 * Proves the server accepts FOR UPDATE SKIP LOCKED on the task table, without locking a row.
 * In: the quoted table and id column. Out: nothing; throws the server's error when unsupported.
 * Side effects: none (a read of no rows in a transaction that commits nothing).
 */
export async function probeSkipLocked(tx: Queryable, table: string, idColumn: string): Promise<void> {
  await tx.query(`SELECT ${idColumn} FROM ${table} WHERE 1 = 0 FOR UPDATE SKIP LOCKED`);
}

/** The indexes a plan (the engine's EXPLAIN rows) reads through, and whether it reads the whole table. */
export function readPlan(db: Db, plan: Row[]): ReadPlan {
  return db.engine.readPlan(plan);
}

/** The server's version, zones and clock, whichever engine it is. */
export async function serverClock(db: Db): Promise<ServerClock> {
  return db.engine.serverClock(db);
}

/**
 * The plan of one statement as readable lines, where the engine's plan rows are not a readable
 * table themselves (PostgreSQL's JSON); null otherwise.
 */
export function planLines(db: Db, plan: Row[]): string[] | null {
  return db.engine.planLines(plan);
}

/**
 * A table's dead and live row versions and its last vacuums, or null where the engine has no vacuum.
 * In: the table's name as configured (possibly schema-qualified). Side effects: none.
 */
export async function tableBloat(db: Db, table: string): Promise<TableBloat | null> {
  return db.engine.tableBloat(db, table);
}

/**
 * Other sessions' transactions open at least `seconds` that hold back vacuum, oldest first; null
 * where the engine has no vacuum. In: the threshold in seconds. Side effects: none.
 */
export async function longTransactions(db: Db, seconds: number): Promise<LongTransaction[] | null> {
  return db.engine.longTransactions(db, seconds);
}

/**
 * The statement that turns wall-clock columns into instants read in `zone`, or null where the
 * engine's wall-clock type is its usual one. Printed, never run.
 */
export function wallClockToInstantStatement(
  db: Db,
  table: string,
  columns: readonly string[],
  zone: string,
): string | null {
  return columns.length === 0 ? null : db.engine.wallClockToInstant(table, columns, zone);
}
