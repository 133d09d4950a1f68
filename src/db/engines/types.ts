import type { Fragment } from '../fragment.js';
import type { Dialect } from '../dialect.js';
import type { Dsn } from '../dsn.js';
import type { Db, Queryable, Row } from '../types.js';

/**
 * The engines taskrecon speaks. Adding a name here without an implementation in the registry is
 * a compile error (its switch is exhaustive), never a silent fallback to another engine.
 */
export type EngineName = 'mysql' | 'sqlite' | 'postgres';

/** How a connection is opened, whichever the engine (each takes the options that apply to it). */
export interface ConnectOptions {
  /** The zone DATETIME writers use (config `appTimeZone`); default: the server's global zone. */
  appTimeZone?: string;
  connectTimeoutMs?: number;
  poolSize?: number;
  /** The time limit of every read statement (0: none); default DEFAULT_MAX_STATEMENT_TIME_MS. */
  maxStatementTimeMs?: number;
  passwordFile?: string;
  /** Embedded engines only: create the database file if missing. */
  create?: boolean;
}

/** What the server says about itself and its clocks, read in one statement. */
export interface ServerClock {
  engine: EngineName;
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

/** What a read replica says about how far behind its primary it is. */
export interface ReplicaLag {
  /** Seconds_Behind_Master; null when replication is stopped or the server does not know. */
  lagSeconds: number | null;
  /** Whether both replication threads run. */
  running: boolean;
  /** Whether the server is a replica at all (it has a replication source configured). */
  isReplica: boolean;
  /** Why the lag is unknown, in words, when it is. */
  reason: string | null;
}

/** A verdict on the server for doctor: its status, what it found, and what to do (or null). */
export interface ServerVerdict {
  status: 'ok' | 'warn' | 'fail';
  message: string;
  hint: string | null;
}

/** The indexes a plan reads through, and whether it reads the whole table. */
export interface ReadPlan {
  indexes: string[];
  fullScan: boolean;
}

/** A table's dead and live row versions and its last vacuums, as the server's statistics count them. */
export interface TableBloat {
  deadRows: number;
  liveRows: number;
  /** Epoch seconds of the last VACUUM (manual or automatic), or null when never since the statistics were reset. */
  lastVacuumEpoch: number | null;
  /** Epoch seconds of the last autovacuum, or null when never. */
  lastAutovacuumEpoch: number | null;
  /** Whether autovacuum is switched off for this table (its storage parameters). */
  autovacuumDisabled: boolean;
  /** The statement that makes autovacuum visit this table sooner (printed, never run). */
  tuneStatement: string;
  /** The statement that reclaims the dead rows now (printed, never run). */
  vacuumStatement: string;
}

/** A transaction of another session that holds back vacuum. */
export interface LongTransaction {
  pid: number;
  /** Seconds since the transaction began. */
  ageSeconds: number;
  /** `active`, `idle in transaction`, … */
  state: string | null;
  user: string | null;
  application: string | null;
  /** The session's last statement, shortened. */
  query: string | null;
}

/**
 * Everything that differs between database engines, in one object per engine (under
 * `db/engines/<engine>/`): how a connection is opened, the SQL text that differs (`dialect`, its
 * DDL included), and the operations whose statements differ as a whole. Code above `db/engines/`
 * asks the connection's engine (`db.engine`) instead of comparing engine names.
 */
export interface Engine {
  readonly name: EngineName;
  /** The SQL text that differs (quoting, time, JSON, hashing, locking). */
  readonly dialect: Dialect;
  /**
   * An embedded file database (no server: one writer at a time, no session zones, no replication,
   * no SKIP LOCKED). Doctor's server checks read this.
   */
  readonly embedded: boolean;
  /** The port a server DSN without one connects to; null for an embedded engine (a file DSN). */
  readonly defaultPort: number | null;
  /**
   * Opens a connection to a DSN of this engine; the driver is imported only here, when first
   * needed. The connection applies `options` as the engine can: the session zone, the statement
   * time limit on every read (in the server's own syntax), the connect timeout, the pool size.
   */
  open(dsn: Dsn, options: ConnectOptions): Promise<Db>;
  /** Runs `fn` so that no statement in it can write (operator-authored SQL in diff's rules). */
  withReadOnly<T>(db: Db, fn: (q: Queryable) => Promise<T>): Promise<T>;
  /** Whether this server version is one taskrecon supports (doctor's `server version`). */
  versionVerdict(version: string): ServerVerdict;
  /**
   * What the version says about FOR UPDATE SKIP LOCKED (doctor's `skip locked`): a final verdict,
   * or null when the version supports it and a statement on the table should prove it.
   */
  skipLockedVerdict(version: string): ServerVerdict | null;
  /** The server's version, zones and clocks. */
  serverClock(db: Db): Promise<ServerClock>;
  /** How far behind its primary the server is, when it is a replica. */
  replicaLag(db: Db): Promise<ReplicaLag>;
  /** The indexes a statement's plan (the dialect's `explain` rows) reads through, and whether it reads the whole table. */
  readPlan(plan: Row[]): ReadPlan;
  /**
   * Whether a whole list on the NDJSON fast path is read pages ahead on other connections
   * (db/sql/list-ahead.ts): where the server's reads are the slower side of a large list, not the
   * client's decoding of the stream.
   */
  listReadAhead: boolean;
  /**
   * Whether a statement's plan (the dialect's `explain` rows) reads indexes alone, in their order:
   * never a table row, no sort.
   */
  indexOnly(plan: Row[]): boolean;
  /**
   * The engine's estimate of a table's rows without reading them, or 0 where a full scan is never
   * held back (an embedded file is never a shared primary).
   */
  estimatedRows(db: Db, table: string): Promise<number>;
  /**
   * How to read the rows `where` selects in primary-key order when walking the primary key costs
   * less than the list's own index (a row lookup per entry): the hint to put after the table name
   * ('' when the plan walks the table already), or undefined when the index is the cheaper read or
   * the planner chooses by itself. `quoted` is the table name as quoted, `table` the bare name.
   */
  primaryKeyWalk(db: Db, quoted: string, table: string, where: Fragment): Promise<string | undefined>;
  /** Seconds an idle connection is kept by the server, or null where there is no such limit. */
  idleTimeout(db: Db): Promise<number | null>;
  /** The collation of a column (declared or the server's), or null (binary / not text). */
  columnCollation(db: Db, table: string, column: string): Promise<string | null>;
  /** The single integer primary-key column of a table, if it has one. */
  integerPrimaryKey(db: Db, table: string): Promise<string | undefined>;
  /**
   * Whether claims may take FOR UPDATE SKIP LOCKED here (still proven by a statement); false
   * where one writer holds the whole database anyway.
   */
  readonly mayProbeSkipLocked: boolean;
  /**
   * A table's dead and live row versions (doctor's `table bloat`), or null where the engine has no
   * vacuum that reclaims them (InnoDB purges old versions itself; SQLite rewrites in place).
   */
  tableBloat(db: Db, table: string): Promise<TableBloat | null>;
  /**
   * Transactions of other sessions on this database open at least `seconds` that hold back the
   * removal of dead rows (doctor's `long transactions`), oldest first; null where no vacuum waits
   * on them.
   */
  longTransactions(db: Db, seconds: number): Promise<LongTransaction[] | null>;
  /**
   * The statement that turns wall-clock time columns into instants, reading their values in
   * `zone`, or null where the wall-clock type is the engine's usual time column (MySQL's DATETIME)
   * or there is no such change (SQLite).
   */
  wallClockToInstant(table: string, columns: readonly string[], zone: string): string | null;
  /**
   * A plan (the dialect's `explain` rows) as readable lines, one per node, indented by depth;
   * null where the rows themselves are readable as a table.
   */
  planLines(plan: Row[]): string[] | null;
  /** How doctor names the server's clocks, in the server's own words, around the client's skew. */
  clockText(clock: ServerClock, skewText: string): string;
}
