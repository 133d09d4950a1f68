import type { Db, Queryable, Row } from '../../types.js';
import type { ReadPlan, ReplicaLag, ServerClock } from '../types.js';

/**
 * What SQLite answers about itself. An embedded file: no zones (DATETIME text is UTC), no
 * replication, no server statistics.
 */

/**
 * The engine's version and clock.
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

/** SQLite has no replication: never a replica. */
export async function sqliteReplicaLag(): Promise<ReplicaLag> {
  return { lagSeconds: null, running: false, isReplica: false, reason: 'SQLite has no replication' };
}

/** The indexes an EXPLAIN QUERY PLAN reads through; SEARCH reads a range, SCAN reads it all. */
export function sqliteReadPlan(plan: Row[]): ReadPlan {
  const indexes = new Set<string>();
  let fullScan = false;
  for (const row of plan) {
    const detail = String(row.detail ?? '');
    const index =
      /USING (?:COVERING )?INDEX (\S+)/.exec(detail) ?? /USING (INTEGER PRIMARY KEY)/.exec(detail);
    if (index?.[1]) indexes.add(index[1]);
    if (/^SCAN /.test(detail)) fullScan = true;
  }
  return { indexes: [...indexes], fullScan };
}

/** Whether every table the plan reads is read through a covering index, and nothing is sorted. */
export function sqliteIndexOnly(plan: Row[]): boolean {
  const details = plan.map((row) => String(row.detail ?? ''));
  if (details.some((d) => /TEMP B-TREE/.test(d))) return false;
  const reads = details.filter((d) => /^(SCAN|SEARCH) /.test(d));
  return reads.length > 0 && reads.every((d) => / USING COVERING INDEX /.test(d));
}

/** A column's declared COLLATE in the table's CREATE statement, or null. */
export async function sqliteColumnCollation(db: Db, table: string, column: string): Promise<string | null> {
  const rows = await db.query<{ sql: unknown }>(
    `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`,
    [table],
  );
  const ddl = String(rows[0]?.sql ?? '');
  const escaped = column.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`["\`\\[]?${escaped}["\`\\]]?\\s+[^,]*?\\bCOLLATE\\s+(\\w+)`, 'i').exec(ddl);
  return match?.[1] ? match[1].toLowerCase() : null;
}

/** The one primary-key column of pragma_table_info, when it is an integer. */
export async function sqliteIntegerPrimaryKey(db: Db, table: string): Promise<string | undefined> {
  const info = await db.query<{ name: string; pk: number; type: string }>(
    `SELECT name, pk, type FROM pragma_table_info(?)`,
    [table],
  );
  const pk = info.filter((c) => c.pk > 0);
  return pk.length === 1 && /int/i.test(pk[0]?.type ?? '') ? pk[0]?.name : undefined;
}

const readers = new WeakMap<Db, number>();

/** `fn` under `PRAGMA query_only` (nested and concurrent readers share it; the last one lifts it). */
export async function sqliteWithReadOnly<T>(db: Db, fn: (q: Queryable) => Promise<T>): Promise<T> {
  const count = readers.get(db) ?? 0;
  if (count === 0) await db.execute('PRAGMA query_only = 1');
  readers.set(db, count + 1);
  try {
    return await fn(db);
  } finally {
    const left = (readers.get(db) ?? 1) - 1;
    readers.set(db, left);
    if (left === 0) await db.execute('PRAGMA query_only = 0');
  }
}
