import type { ReadPlan, ServerClock } from '../engines/types.js';
import type { Db, Queryable, Row } from '../types.js';

export type { ServerClock } from '../engines/types.js';

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
