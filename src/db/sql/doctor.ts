import type { Dialect } from '../dialect.js';
import type { Db, Queryable, Row } from '../types.js';

/** What the server says about itself and its clocks, read in one statement. */
export interface ServerClock {
  engine: 'mysql' | 'sqlite';
  version: string;
  /** @@global.time_zone (MySQL) — what sessions of other writers get by default. */
  globalZone: string | null;
  /** @@session.time_zone of taskrecon's own (pinned) session. */
  sessionZone: string | null;
  /** @@system_time_zone: the zone of the server host, used when the global zone is SYSTEM. */
  systemZone: string | null;
  /** UNIX_TIMESTAMP(): the server's clock. */
  nowEpoch: number;
  /** NOW() in the session zone, as the server formats it. */
  now: string;
  /** UTC_TIMESTAMP(), as the server formats it. */
  utcNow: string;
  /** Offset of the session zone from UTC now, in seconds. */
  sessionOffsetSeconds: number;
  /** Offset of the global zone from UTC now, in seconds; null when the server cannot convert to it. */
  globalOffsetSeconds: number | null;
}

const FORMAT = "'%Y-%m-%d %H:%i:%s'";

/**
 * The server's version, zones and clocks (MySQL/MariaDB).
 * In: nothing. Out: one row. Reads only server variables.
 */
export async function mysqlServerClock(db: Db): Promise<ServerClock> {
  const [row] = await db.query<Row>(
    `SELECT VERSION() AS version, @@global.time_zone AS globalZone, @@session.time_zone AS sessionZone,
            @@system_time_zone AS systemZone, UNIX_TIMESTAMP() AS nowEpoch,
            DATE_FORMAT(NOW(), ${FORMAT}) AS now, DATE_FORMAT(UTC_TIMESTAMP(), ${FORMAT}) AS utcNow,
            TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW()) AS sessionOffset,
            TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), CONVERT_TZ(UTC_TIMESTAMP(), '+00:00', @@global.time_zone)) AS globalOffset`,
  );
  if (!row) throw new Error('the server returned no row for SELECT VERSION()');
  return {
    engine: 'mysql',
    version: String(row.version),
    globalZone: row.globalZone === null ? null : String(row.globalZone),
    sessionZone: row.sessionZone === null ? null : String(row.sessionZone),
    systemZone: row.systemZone === null ? null : String(row.systemZone),
    nowEpoch: Number(row.nowEpoch),
    now: String(row.now),
    utcNow: String(row.utcNow),
    sessionOffsetSeconds: Number(row.sessionOffset),
    globalOffsetSeconds: row.globalOffset === null ? null : Number(row.globalOffset),
  };
}

/**
 * The engine's version and clock (SQLite has no zones: DATETIME text is UTC).
 * In: nothing. Out: one row. Reads nothing from tables.
 */
export async function sqliteServerClock(db: Db): Promise<ServerClock> {
  const [row] = await db.query<Row>(
    `SELECT sqlite_version() AS version, CAST(strftime('%s', 'now') AS INTEGER) AS nowEpoch,
            datetime('now') AS utcNow`,
  );
  if (!row) throw new Error('SQLite returned no row for sqlite_version()');
  return {
    engine: 'sqlite',
    version: String(row.version),
    globalZone: null,
    sessionZone: 'UTC',
    systemZone: null,
    nowEpoch: Number(row.nowEpoch),
    now: String(row.utcNow),
    utcNow: String(row.utcNow),
    sessionOffsetSeconds: 0,
    globalOffsetSeconds: 0,
  };
}

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

/** The indexes a plan reads through, and whether it reads the whole table. */
export function readPlan(dialect: Dialect, plan: Row[]): { indexes: string[]; fullScan: boolean } {
  const indexes = new Set<string>();
  let fullScan = false;
  for (const row of plan) {
    if (dialect.name === 'mysql') {
      if (row.key !== null && row.key !== undefined) indexes.add(String(row.key));
      // ALL reads every row; index reads every entry of an index: both grow with the table.
      if (row.type === 'ALL' || row.type === 'index') fullScan = true;
    } else {
      const detail = String(row.detail ?? '');
      const index =
        /USING (?:COVERING )?INDEX (\S+)/.exec(detail) ?? /USING (INTEGER PRIMARY KEY)/.exec(detail);
      if (index?.[1]) indexes.add(index[1]);
      if (/^SCAN /.test(detail)) fullScan = true; // SEARCH reads a range; SCAN reads it all
    }
  }
  return { indexes: [...indexes], fullScan };
}

/** The server's version, zones and clock, whichever engine it is. */
export async function serverClock(db: Db): Promise<ServerClock> {
  return db.dialect.name === 'mysql' ? mysqlServerClock(db) : sqliteServerClock(db);
}
