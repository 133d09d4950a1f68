import type { Db, Queryable, Row } from '../../types.js';
import type { ReplicaLag, ServerClock, ServerVerdict } from '../types.js';
import { quotePostgresId } from './ddl.js';

/**
 * What PostgreSQL answers about itself: clocks, replication, plans, statistics and the catalogs.
 * Every function reads only.
 */

const FORMAT = "'YYYY-MM-DD HH24:MI:SS'";

/**
 * The TimeZone a session of the server gets when it sets none (postgresql.conf, or ALTER
 * DATABASE/ROLE … SET), read when the connection opened, before taskrecon pinned its own.
 */
const defaultZones = new WeakMap<Db, string>();

export function rememberDefaultZone(db: Db, zone: string): void {
  defaultZones.set(db, zone);
}

/** A possibly schema-qualified table name as the catalogs' (schema, name); no schema: the search path's first. */
export function splitTable(table: string): { schema: string | null; name: string } {
  const dot = table.lastIndexOf('.');
  return dot === -1
    ? { schema: null, name: table }
    : { schema: table.slice(0, dot), name: table.slice(dot + 1) };
}

/** `(schema, name)` placeholders' SQL and parameters: the named schema, or current_schema(). */
export function tableWhere(
  table: string,
  schemaCol: string,
  nameCol: string,
): { sql: string; params: string[] } {
  const { schema, name } = splitTable(table);
  return schema === null
    ? { sql: `${schemaCol} = current_schema() AND ${nameCol} = ?`, params: [name] }
    : { sql: `${schemaCol} = ? AND ${nameCol} = ?`, params: [schema, name] };
}

/**
 * The server's version, zones and clocks. PostgreSQL has one zone setting, `TimeZone`: the session's
 * (pinned to appTimeZone when configured); the server's default is what other writers' sessions get.
 * In: nothing. Out: one row. Reads only settings.
 */
export async function postgresServerClock(db: Db): Promise<ServerClock> {
  const globalZone = defaultZones.get(db) ?? null;
  const [row] = await db.query<Row>(
    `SELECT current_setting('server_version') AS version,
            current_setting('TimeZone') AS "sessionZone",
            FLOOR(EXTRACT(EPOCH FROM statement_timestamp()))::bigint AS "nowEpoch",
            to_char(statement_timestamp(), ${FORMAT}) AS now,
            to_char(statement_timestamp() AT TIME ZONE 'UTC', ${FORMAT}) AS "utcNow",
            EXTRACT(TIMEZONE FROM statement_timestamp())::int AS "sessionOffset",
            FLOOR(EXTRACT(EPOCH FROM (statement_timestamp() AT TIME ZONE COALESCE(?, current_setting('TimeZone')))
                - (statement_timestamp() AT TIME ZONE 'UTC')))::int AS "globalOffset"`,
    [globalZone],
  );
  if (!row) throw new Error("the server returned no row for current_setting('server_version')");
  return {
    engine: 'postgres',
    version: String(row.version),
    globalZone: globalZone ?? (row.sessionZone === null ? null : String(row.sessionZone)),
    sessionZone: row.sessionZone === null ? null : String(row.sessionZone),
    systemZone: null,
    nowEpoch: Number(row.nowEpoch),
    now: String(row.now),
    utcNow: String(row.utcNow),
    sessionOffsetSeconds: Number(row.sessionOffset),
    globalOffsetSeconds: row.globalOffset === null ? null : Number(row.globalOffset),
  };
}

/**
 * The replica's lag: a server in recovery is a streaming replica. When it has replayed all the
 * WAL it received, it is 0 (an idle primary sends nothing new; the age of the last replayed
 * transaction would grow although nothing is missing); otherwise it is the age of the last
 * transaction it replayed, `now() - pg_last_xact_replay_timestamp()`: every change newer than that
 * may be missing. Unknown (null) while the WAL receiver is not streaming (its primary gone, or
 * replication never started): the data may then be any age, as MySQL's stopped replication.
 * In: a connection to the replica. Out: its lag. Reads only.
 */
export async function postgresReplicaLag(db: Db): Promise<ReplicaLag> {
  const [row] = await db.query<Row>(
    `SELECT pg_is_in_recovery() AS replica,
            pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() AS replayed,
            FLOOR(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()))::bigint AS age,
            (SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming')::int AS receiving`,
  );
  if (!row || row.replica !== true) {
    return {
      lagSeconds: null,
      running: false,
      isReplica: false,
      reason: 'the server is not a replica (pg_is_in_recovery() is false)',
    };
  }
  const running = Number(row.receiving) > 0;
  if (!running) {
    return {
      lagSeconds: null,
      running,
      isReplica: true,
      reason: "the WAL receiver is not streaming (pg_stat_wal_receiver): the replica's data may be any age",
    };
  }
  if (row.replayed === true) return { lagSeconds: 0, running, isReplica: true, reason: null };
  if (row.age === null) {
    return {
      lagSeconds: null,
      running,
      isReplica: true,
      reason: 'the replica has replayed no transaction yet, so its lag is unknown',
    };
  }
  return { lagSeconds: Math.max(0, Number(row.age)), running, isReplica: true, reason: null };
}

/**
 * The planner's estimate of a table's rows (pg_class.reltuples, -1 before the first ANALYZE on 14+).
 * In: the table. Out: estimated rows. Reads only the catalogs.
 */
export async function postgresEstimatedRows(db: Db, table: string): Promise<number> {
  const where = tableWhere(table, 'n.nspname', 'c.relname');
  const rows = await db.query<{ n: unknown }>(
    `SELECT c.reltuples::bigint AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE ${where.sql}`,
    where.params,
  );
  return Math.max(0, Number(rows[0]?.n ?? 0));
}

/** `idle_session_timeout` in seconds (PostgreSQL 14+), or null when it is off or unknown. */
export async function postgresIdleTimeout(db: Db): Promise<number | null> {
  const rows = await db.query<{ ms: unknown }>(
    `SELECT setting::bigint AS ms FROM pg_settings WHERE name = 'idle_session_timeout'`,
  );
  const ms = Number(rows[0]?.ms);
  return Number.isFinite(ms) && ms > 0 ? Math.floor(ms / 1000) : null;
}

/**
 * A column's collation when it is nondeterministic (it may call keys equal whose bytes differ);
 * null for other text columns (keys compare byte-wise) and columns that are not text.
 */
export async function postgresColumnCollation(db: Db, table: string, column: string): Promise<string | null> {
  const where = tableWhere(table, 'c.table_schema', 'c.table_name');
  const rows = await db.query<{ c: unknown; text: unknown; deterministic: unknown }>(
    `SELECT c.collation_name AS c, c.data_type IN ('character varying', 'character', 'text') AS text,
            COALESCE((SELECT k.collisdeterministic FROM pg_collation k
                       WHERE k.collname = c.collation_name AND k.collnamespace::regnamespace::text = c.collation_schema), true) AS deterministic
       FROM information_schema.columns c
      WHERE ${where.sql} AND c.column_name = ?`,
    [...where.params, column],
  );
  const row = rows[0] as Row | undefined;
  // A deterministic collation (the database's default is one) calls keys equal only when their
  // bytes are: keys compare as binary, whatever order the collation sorts them in.
  if (!row || row.text !== true || row.deterministic !== false) return null;
  return row.c === null || row.c === undefined ? null : String(row.c);
}

/** The primary key's one column, when it is an integer (whatever the constraint is named). */
export async function postgresIntegerPrimaryKey(db: Db, table: string): Promise<string | undefined> {
  const rows = await db.query<{ name: string; typ: string }>(
    `SELECT a.attname AS name, t.typname AS typ
       FROM pg_index x
       JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
       JOIN pg_type t ON t.oid = a.atttypid
      WHERE x.indrelid = to_regclass(?) AND x.indisprimary AND x.indnatts = 1`,
    [quotePostgresId(table)],
  );
  const row = rows[0];
  return row && /^int[248]$/.test(row.typ) ? row.name : undefined;
}

/**
 * `fn` inside a READ ONLY transaction (a function with a side effect fails there). READ COMMITTED,
 * as every transaction of the pool: each chunk sees the latest committed rows and no lock is taken.
 */
export async function postgresWithReadOnly<T>(db: Db, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    // The first statement of the transaction, so the mode may still change.
    await tx.execute('SET TRANSACTION READ ONLY');
    return fn(tx);
  });
}

/** The major version of `server_version` (`15.4 (Debian …)` → 15). */
function majorOf(version: string): number | undefined {
  const match = /^(\d+)(?:\.(\d+))?/.exec(version);
  return match ? Number(match[1]) : undefined;
}

/** PostgreSQL 13 and later are supported. */
export function postgresVersionVerdict(version: string): ServerVerdict {
  const major = majorOf(version);
  if (major === undefined) {
    return {
      status: 'warn',
      message: `unrecognised server version '${version}'`,
      hint: 'taskrecon supports PostgreSQL 13 and later.',
    };
  }
  return major >= 13
    ? { status: 'ok', message: `PostgreSQL ${version}`, hint: null }
    : {
        status: 'fail',
        message: `PostgreSQL ${version} is older than taskrecon supports`,
        hint: 'Upgrade to PostgreSQL 13 or later.',
      };
}

/** SKIP LOCKED exists since PostgreSQL 9.5: every supported version has it, still proven by a statement. */
export function postgresSkipLockedVerdict(version: string): ServerVerdict | null {
  const major = majorOf(version);
  if (major === undefined || major >= 10) return null;
  return {
    status: 'fail',
    message: `${version} is too old for taskrecon's claims`,
    hint: 'Upgrade to PostgreSQL 13 or later.',
  };
}
