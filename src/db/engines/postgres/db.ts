// Over 300 lines: one Db over a node-postgres pool, with its sessions, statement limits, transactions and cursors, reads best whole.
import pg from 'pg';
import type { Client, CustomTypes, Pool, PoolClient, PoolConfig, QueryResult } from 'pg';
import Cursor from 'pg-cursor';
import { TaskreconError } from '../../../errors.js';
import { displayDsn, maskDsnText, type PostgresDsn } from '../../dsn.js';
import type {
  ColumnInfo,
  Db,
  ExecResult,
  IndexInfo,
  Queryable,
  Row,
  RowEncoder,
  StreamOptions,
} from '../../types.js';
import {
  DEFAULT_MAX_STATEMENT_TIME_MS,
  statementLabel,
  statementSite,
  statementTimeoutError,
} from '../../statement-limit.js';
import type { ConnectOptions } from '../types.js';
import { copyEncoded } from './copy.js';
import { postgresEngine } from './index.js';
import { foldedAliases, numberPlaceholders } from './placeholders.js';
import { rememberDefaultZone, tableWhere } from './server.js';

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
/** Rows per cursor read of streamBatches(): big enough that per-batch costs vanish, small enough to stay flat in memory. */
const STREAM_BATCH_ROWS = 1000;

const READ_STATEMENT = /^\s*SELECT\b/i;
const BEGIN = 'BEGIN ISOLATION LEVEL READ COMMITTED';
const INSERT_INTO =
  /^\s*INSERT\s+INTO\s+((?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)(?:\.(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*))?)/i;

/** Type OIDs whose text this engine reads its own way. */
const INT8 = 20;
const NUMERIC = 1700;
const AS_TEXT = new Set([
  114, // json
  3802, // jsonb
  1082, // date
  1114, // timestamp
  1184, // timestamptz
  1083, // time
  1266, // timetz
  1186, // interval
]);

/**
 * Values as mysql2 gives them to the rest of the code: a bigint is a number when it is a safe
 * integer, else its decimal text; numeric is a number; times and JSON stay the server's text
 * (every time the code compares is read as epoch seconds in SQL anyway).
 */
const TYPES: CustomTypes = {
  getTypeParser(oid, format) {
    if (oid === INT8) {
      return (text: string) => {
        const n = Number(text);
        return Number.isSafeInteger(n) ? n : text;
      };
    }
    if (oid === NUMERIC) return (text: string) => Number(text);
    if (AS_TEXT.has(oid)) return (text: string) => text;
    return pg.types.getTypeParser(oid, format);
  },
};

/** A libpq `options` value: `-c name=value`, spaces and backslashes escaped. */
const setting = (name: string, value: string): string => `-c ${name}=${value.replace(/[\\ ]/g, '\\$&')}`;

/** The `ssl` option of an `sslmode` DSN parameter: disable/allow/prefer connect in plain text. */
function sslOf(mode: string | null): PoolConfig['ssl'] {
  switch (mode) {
    case 'require':
      return { rejectUnauthorized: false };
    case 'verify-ca':
    case 'verify-full':
      return { rejectUnauthorized: true };
    case null:
    case 'disable':
    case 'allow':
    case 'prefer':
      return false;
    default:
      throw new TaskreconError(`unknown sslmode '${mode}'`, {
        code: 'CONFIG_INVALID',
        hint: 'Use sslmode=disable, require, verify-ca or verify-full.',
      });
  }
}

/** Opens a pool whose every session is pinned to one TimeZone and READ COMMITTED. */
export async function openPostgres(dsn: PostgresDsn, options: ConnectOptions = {}): Promise<Db> {
  const display = displayDsn(dsn);
  const base: PoolConfig = {
    host: dsn.host,
    port: dsn.port,
    user: dsn.user,
    password: dsn.password,
    database: dsn.database,
    ssl: sslOf(dsn.params.get('sslmode')),
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    application_name: 'taskrecon',
    types: TYPES,
  };
  const warnings: string[] = [];
  let zone: string;
  let defaultZone: string;
  try {
    const probe = new pg.Client(base);
    await probe.connect();
    try {
      defaultZone = await currentZone(probe);
      zone = options.appTimeZone ? await chooseZone(probe, options.appTimeZone) : defaultZone;
    } finally {
      await probe.end();
    }
  } catch (error) {
    if (error instanceof TaskreconError) throw error;
    throw connectionError(error, display);
  }
  // The connect timeout bounds opening a session, never waiting for a free one (as mysql2's pool
  // waits): pg-pool would apply connectionTimeoutMillis to both, so each client carries its own.
  // pg-pool keeps the password as a non-enumerable property of the options it hands each client,
  // which a spread drops: it is passed on by name.
  const { connectionTimeoutMillis, ...poolBase } = base;
  class TimedClient extends pg.Client {
    constructor(config: PoolConfig = {}) {
      super({ ...config, password: config.password, connectionTimeoutMillis });
    }
  }
  const pool = new pg.Pool({
    ...poolBase,
    Client: TimedClient,
    max: options.poolSize ?? 4,
    // DateStyle ISO: the time text a list's page key carries (and the driver's time parser) is ISO.
    options: [
      setting('TimeZone', zone),
      setting('DateStyle', 'ISO'),
      setting('default_transaction_isolation', 'read committed'),
    ].join(' '),
  });
  // An idle pooled session the server ends is dropped by the pool; the next statement opens another.
  pool.on('error', () => undefined);
  const limitMs = options.maxStatementTimeMs ?? DEFAULT_MAX_STATEMENT_TIME_MS;
  const db = new PostgresDb(pool, display, zone, warnings, limitMs);
  rememberDefaultZone(db, defaultZone);
  return db;
}

/**
 * The zone to pin for the app's zone (an IANA name, or an ISO offset such as +08:00), read back as
 * the server names it, so every pooled session sets the same.
 */
async function chooseZone(probe: Client, appTimeZone: string): Promise<string> {
  try {
    // PostgreSQL reads a bare '+08:00' as POSIX (west of Greenwich positive): an ISO offset goes as an interval.
    if (/^[+-]\d{2}:\d{2}$/.test(appTimeZone)) {
      await probe.query(`SET TIME ZONE INTERVAL '${appTimeZone}' HOUR TO MINUTE`);
    } else {
      await probe.query(`SELECT set_config('TimeZone', $1, false)`, [appTimeZone]);
    }
  } catch (error) {
    throw new TaskreconError(`appTimeZone '${appTimeZone}' is not a time zone`, {
      code: 'CONFIG_INVALID',
      hint: "Use an IANA name such as Asia/Shanghai, or an offset such as '+08:00'.",
      cause: error,
    });
  }
  return currentZone(probe);
}

async function currentZone(probe: Client): Promise<string> {
  const result = await probe.query<{ zone: string }>(`SELECT current_setting('TimeZone') AS zone`);
  return String(result.rows[0]?.zone ?? 'UTC');
}

/** Turns a driver error into a message that says what to do, with the password masked. */
export function connectionError(error: unknown, display: string): TaskreconError {
  const e = error as { code?: string; message?: string };
  const message = maskDsnText(e.message ?? String(error));
  const hints: Record<string, string> = {
    ECONNREFUSED: `Nothing listens at ${display}. Is the server running? Check host and port.`,
    ETIMEDOUT: `No answer from ${display} within the connect timeout. Check host, port and firewall.`,
    ENOTFOUND: `The host of ${display} does not resolve.`,
    '28P01': 'Check the user and password (or --password-file).',
    '28000': 'Check the user name, and that pg_hba.conf lets it connect from this host.',
    '3D000': 'Create the database, or fix its name in the DSN.',
    '42501': 'Grant the user CONNECT on the database.',
  };
  return new TaskreconError(`cannot connect to ${display}: ${message || e.code || 'connection failed'}`, {
    code: 'CONNECTION',
    hint: hints[e.code ?? ''] ?? 'Check the DSN given with --db, TASKRECON_DB or the config file.',
    cause: error,
  });
}

/** query_canceled: statement_timeout fired (or the statement was cancelled). */
function isStatementTimeout(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | undefined;
  return e?.code === '57014' && /statement timeout/i.test(e.message ?? '');
}

/** Wraps a failed statement on an open connection (connection lost, permission, time limit). */
function statementError(
  error: unknown,
  display: string,
  timed?: { site: { stack?: string }; ms: number },
): unknown {
  const e = error as { code?: string; message?: string };
  if (error instanceof TaskreconError) return error;
  if (timed && isStatementTimeout(error)) {
    return statementTimeoutError(error, statementLabel(timed.site), timed.ms);
  }
  const code = e.code ?? '';
  if (
    code === 'ECONNRESET' ||
    code === 'ECONNREFUSED' ||
    code === 'EPIPE' ||
    code.startsWith('08') || // connection exception
    code === '57P01' || // admin shutdown
    /Connection terminated/i.test(e.message ?? '')
  ) {
    return new TaskreconError(
      `lost the connection to ${display}: ${maskDsnText(e.message ?? String(error))}`,
      {
        code: 'CONNECTION',
        hint: 'Nothing half-done was committed; run the command again once the server is back.',
        cause: error,
      },
    );
  }
  if (code === '42501') {
    return new TaskreconError(maskDsnText(e.message ?? String(error)), {
      code: 'PERMISSION',
      hint: 'Grant the user the privileges this command needs.',
      cause: error,
    });
  }
  return error;
}

/**
 * Rows keyed by each alias as the statement wrote it: PostgreSQL folds unquoted aliases to lower
 * case (`AS bizType` comes back as `biztype`), MySQL and SQLite keep them.
 */
function restoreAliases<T>(sql: string, rows: T[]): T[] {
  const aliases = foldedAliases(sql);
  if (!aliases) return rows;
  return rows.map((row) => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(row as Record<string, unknown>))
      out[aliases.get(key) ?? key] = value;
    return out as T;
  });
}

/** What a statement runs on: one session of the pool, held by this object for a transaction or a read. */
interface Session {
  query<R = unknown>(config: {
    text: string;
    values?: unknown[];
    rowMode?: 'array';
    types?: CustomTypes;
  }): Promise<QueryResult<R>>;
}

/** Per-table cache of the identity (or serial) column an INSERT returns as its insert id. */
type IdentityCache = Map<string, Promise<string | null>>;

class PostgresQueryable implements Queryable {
  /** Whether this transaction's session now has the read limit (else the session's default). */
  private limited = false;

  constructor(
    private readonly session: Session,
    protected readonly displayText: string,
    protected readonly limitMs: number,
    private readonly identities: IdentityCache,
  ) {}

  async query<T = Row>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    const site = statementSite();
    try {
      // Inside a transaction the limit is switched on for reads and back to the session's default for writes.
      const read = this.limitMs > 0 && READ_STATEMENT.test(sql);
      if (read !== this.limited) {
        await this.session.query({
          text: `SET LOCAL statement_timeout ${read ? `= ${Math.trunc(this.limitMs)}` : 'TO DEFAULT'}`,
        });
        this.limited = read;
      }
      const result = await this.session.query<T>({
        text: numberPlaceholders(sql),
        values: [...params],
        types: TYPES,
      });
      return restoreAliases(sql, result.rows);
    } catch (error) {
      throw statementError(error, this.displayText, { site, ms: this.limitMs });
    }
  }

  async execute(sql: string, params: readonly unknown[] = []): Promise<ExecResult> {
    try {
      if (this.limited) {
        await this.session.query({ text: 'SET LOCAL statement_timeout TO DEFAULT' });
        this.limited = false;
      }
      const returning = await this.insertIdColumn(sql);
      const text = numberPlaceholders(sql) + (returning ? ` RETURNING ${returning} AS insert_id` : '');
      const result = await this.session.query<{ insert_id?: unknown }>({
        text,
        values: [...params],
        types: TYPES,
      });
      const id = result.rows[0]?.insert_id;
      return {
        affectedRows: result.rowCount ?? 0,
        insertId: typeof id === 'number' || typeof id === 'string' ? id : 0,
      };
    } catch (error) {
      throw statementError(error, this.displayText);
    }
  }

  /**
   * The identity or serial column of the table an `INSERT INTO` without RETURNING writes, quoted,
   * so its value comes back as the insert id (MySQL's AUTO_INCREMENT id); null when it has none.
   */
  private async insertIdColumn(sql: string): Promise<string | null> {
    const table = INSERT_INTO.exec(sql)?.[1];
    if (!table || /\bRETURNING\b/i.test(sql)) return null;
    let column = this.identities.get(table);
    if (!column) {
      column = this.session
        .query<{ name: string }>({
          text: `SELECT a.attname AS name FROM pg_attribute a
                  WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
                    AND (a.attidentity <> '' OR pg_get_serial_sequence($1, a.attname) IS NOT NULL)
                  ORDER BY a.attnum LIMIT 1`,
          values: [table],
        })
        .then((r) => (r.rows[0] ? '"' + r.rows[0].name.replace(/"/g, '""') + '"' : null));
      this.identities.set(table, column);
      column.catch(() => this.identities.delete(table));
    }
    return column;
  }
}

/** Runs `fn` on one pooled session inside BEGIN … COMMIT (ROLLBACK when it throws). */
async function inTransaction<T>(
  pool: Pool,
  display: string,
  fn: (client: PoolClient) => Promise<T>,
  begin = BEGIN,
): Promise<T> {
  const client = await pool.connect().catch((error: unknown) => {
    throw statementError(error, display);
  });
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    client.release();
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
      client.release();
    } catch {
      client.release(true);
    }
    throw error;
  }
}

class PostgresDb implements Db {
  readonly engine = postgresEngine;
  readonly dialect = postgresEngine.dialect;
  private readonly identities: IdentityCache = new Map();

  constructor(
    private readonly pool: Pool,
    readonly display: string,
    readonly sessionTimeZone: string,
    readonly warnings: string[],
    private readonly limitMs: number,
  ) {}

  /** A read runs in its own transaction so that SET LOCAL statement_timeout ends with it (and survives poolers). */
  async query<T = Row>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    if (this.limitMs > 0 && READ_STATEMENT.test(sql)) {
      const site = statementSite();
      try {
        return await inTransaction(
          this.pool,
          this.display,
          async (client) => {
            const result = await client.query<T>({
              text: numberPlaceholders(sql),
              values: [...params],
              types: TYPES,
            });
            return restoreAliases(sql, result.rows);
          },
          // One round trip: a statement without parameters may hold several.
          `${BEGIN}; SET LOCAL statement_timeout = ${Math.trunc(this.limitMs)}`,
        );
      } catch (error) {
        throw statementError(error, this.display, { site, ms: this.limitMs });
      }
    }
    return new PostgresQueryable(this.pool, this.display, 0, this.identities).query<T>(sql, params);
  }

  execute(sql: string, params: readonly unknown[] = []): Promise<ExecResult> {
    return new PostgresQueryable(this.pool, this.display, 0, this.identities).execute(sql, params);
  }

  async *stream(
    sql: string,
    params: readonly unknown[] = [],
    options: StreamOptions = {},
  ): AsyncIterable<unknown> {
    for await (const batch of this.streamBatches(sql, params, options)) yield* batch;
  }

  /**
   * Rows through a server-side cursor (pg-cursor), STREAM_BATCH_ROWS per fetch, inside one
   * transaction under the statement limit: memory stays flat however many rows come. Leaving
   * early closes the cursor and ends the transaction.
   */
  async *streamBatches(
    sql: string,
    params: readonly unknown[] = [],
    options: StreamOptions = {},
  ): AsyncIterable<unknown[]> {
    const site = statementSite();
    const client = await this.pool.connect().catch((error: unknown) => {
      throw statementError(error, this.display);
    });
    let cursor: Cursor | undefined;
    let clean = false;
    try {
      await client.query(
        this.limitMs > 0 && READ_STATEMENT.test(sql)
          ? `${BEGIN}; SET LOCAL statement_timeout = ${Math.trunc(this.limitMs)}`
          : BEGIN,
      );
      const open = client.query(
        new Cursor(numberPlaceholders(sql), [...params], {
          ...(options.rowsAsArray ? { rowMode: 'array' as const } : {}),
          types: TYPES,
        }),
      );
      cursor = open;
      for (;;) {
        let rows: unknown[];
        try {
          rows = await open.read(STREAM_BATCH_ROWS);
        } catch (error) {
          throw statementError(error, this.display, { site, ms: this.limitMs });
        }
        if (rows.length === 0) break;
        yield options.rowsAsArray ? rows : restoreAliases(sql, rows);
        if (rows.length < STREAM_BATCH_ROWS) break;
      }
      clean = true;
    } finally {
      try {
        if (cursor) await cursor.close();
        await client.query(clean ? 'COMMIT' : 'ROLLBACK');
        client.release();
      } catch {
        client.release(true);
      }
    }
  }

  /**
   * The rows of a read as NDJSON (or whatever `encoder` writes) straight from
   * `COPY (…) TO STDOUT`: the fast path of `scan --format ndjson`, in the same transaction and
   * time limit as streamBatches().
   */
  streamTextEncoded(sql: string, params: readonly unknown[], encoder: RowEncoder): AsyncIterable<Buffer> {
    return copyEncoded(
      this.pool,
      sql,
      params,
      encoder,
      READ_STATEMENT.test(sql) ? this.limitMs : 0,
      BEGIN,
      (error, timed) => statementError(error, this.display, timed),
    );
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    try {
      return await inTransaction(this.pool, this.display, (client) =>
        fn(new PostgresQueryable(client, this.display, this.limitMs, this.identities)),
      );
    } catch (error) {
      throw statementError(error, this.display);
    }
  }

  async columns(table: string): Promise<ColumnInfo[] | undefined> {
    const where = tableWhere(table, 'n.nspname', 'c.relname');
    const rows = await this.query<Row>(
      `SELECT a.attname AS name, CASE WHEN t.typtype = 'e' THEN 'enum' ELSE t.typname END AS typ,
              format_type(a.atttypid, a.atttypmod) AS "columnType",
              information_schema._pg_char_max_length(a.atttypid, a.atttypmod) AS "maxLength",
              NOT a.attnotnull AS nullable
         FROM pg_attribute a
         JOIN pg_class c ON c.oid = a.attrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_type t ON t.oid = a.atttypid
        WHERE ${where.sql} AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum`,
      where.params,
    );
    if (rows.length === 0) return undefined;
    return rows.map((r) => ({
      name: String(r.name),
      dataType: baseType(String(r.typ)),
      columnType: String(r.columnType),
      maxLength: r.maxLength === null ? null : Number(r.maxLength),
      nullable: r.nullable === true,
    }));
  }

  async indexes(table: string): Promise<IndexInfo[]> {
    const where = tableWhere(table, 'n.nspname', 't.relname');
    const rows = await this.query<Row>(
      `SELECT i.relname AS name, a.attname AS col, x.indisunique AS "unique"
         FROM pg_index x
         JOIN pg_class t ON t.oid = x.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace
         JOIN pg_class i ON i.oid = x.indexrelid
         CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, position)
         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
        WHERE ${where.sql}
        ORDER BY i.relname, k.position`,
      where.params,
    );
    const byName = new Map<string, IndexInfo>();
    for (const r of rows) {
      const name = String(r.name);
      const index = byName.get(name) ?? { name, columns: [], unique: r.unique === true };
      index.columns.push(String(r.col));
      byName.set(name, index);
    }
    return [...byName.values()];
  }

  async nowEpoch(): Promise<number> {
    const rows = await this.query<{ now: number }>(`SELECT ${this.dialect.nowEpoch} AS now`);
    return Number(rows[0]?.now);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * The lower-case base type the code expects (MySQL's names): `timestamptz` is an instant
 * (`timestamp`), `timestamp` without time zone a wall-clock time (`datetime`).
 */
export function baseType(typname: string): string {
  const names: Record<string, string> = {
    timestamptz: 'timestamp',
    timestamp: 'datetime',
    date: 'date',
    int2: 'smallint',
    int4: 'int',
    int8: 'bigint',
    numeric: 'decimal',
    varchar: 'varchar',
    bpchar: 'char',
    text: 'text',
    json: 'json',
    jsonb: 'json',
    bool: 'boolean',
    bytea: 'blob',
    // An enum type of the application's own (pg-boss's job_state), as the column query names it.
    enum: 'enum',
  };
  return names[typname] ?? typname;
}
