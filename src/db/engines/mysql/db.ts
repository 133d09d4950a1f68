// Over 300 lines: one Db over a mysql2 pool, with its sessions, transactions, streams and encoded streams, reads best whole.
import { mysql } from './driver.js';
import type { Pool, PoolConnection } from 'mysql2/promise';
import type { Connection as CallbackConnection } from 'mysql2';
import { TaskreconError } from '../../../errors.js';
import { displayDsn, maskDsnText, type MysqlDsn } from '../../dsn.js';
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
import { observesDaylightSaving, offsetOfZone } from '../../zone.js';
import {
  DEFAULT_MAX_STATEMENT_TIME_MS,
  statementLabel,
  statementSite,
  statementTimeoutError,
} from '../../statement-limit.js';
import type { ConnectOptions } from '../types.js';
import { mysqlEngine } from './index.js';
import { flavourOf, isStatementTimeout, limitStatement, type MysqlFlavour } from './statement-limit.js';

/** How read statements are limited on this server. */
interface StatementLimit {
  flavour: MysqlFlavour;
  ms: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
/** Rows per batch of streamBatches(): big enough that per-batch costs vanish, small enough to stay flat in memory. */
const STREAM_BATCH_ROWS = 1000;
/** Output bytes per chunk of streamEncoded(). */
const STREAM_CHUNK_BYTES = 256 * 1024;
/** Batches or chunks read ahead of the consumer before the socket is paused (≈ a few MB). */
const STREAM_MAX_QUEUED = 8;

/** The events of a running mysql2 query. */
interface QueryEvents {
  on(event: string, listener: (...args: never[]) => void): QueryEvents;
}

/**
 * A row parser in mysql2's shape (`next(packet)`) that finds the columns of a text-protocol row
 * (length-encoded strings; 0xFB is NULL), hands their byte ranges to `encoder`, then calls `afterRow`.
 */
function wireRowParser(
  columns: number,
  encoder: RowEncoder,
  afterRow: () => void,
): { next(packet: { buffer: Buffer; offset: number }): null } {
  const starts = new Int32Array(columns);
  const ends = new Int32Array(columns);
  return {
    next(packet) {
      const buf = packet.buffer;
      let at = packet.offset;
      for (let i = 0; i < columns; i++) {
        const first = buf[at++] as number;
        let length: number;
        if (first < 0xfb) length = first;
        else if (first === 0xfb) {
          starts[i] = -1;
          ends[i] = -1;
          continue;
        } else if (first === 0xfc) {
          length = buf.readUInt16LE(at);
          at += 2;
        } else if (first === 0xfd) {
          length = buf.readUIntLE(at, 3);
          at += 3;
        } else {
          length = Number(buf.readBigUInt64LE(at));
          at += 8;
        }
        starts[i] = at;
        at += length;
        ends[i] = at;
      }
      encoder.encode(buf, starts, ends);
      afterRow();
      return null;
    },
  };
}

const READ_COMMITTED = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED';

/** Opens a pool whose every connection is pinned to one session time zone and READ COMMITTED. */
export async function openMysql(dsn: MysqlDsn, options: ConnectOptions = {}): Promise<Db> {
  const display = displayDsn(dsn);
  const base = {
    host: dsn.host,
    port: dsn.port,
    user: dsn.user,
    password: dsn.password,
    database: dsn.database,
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: false,
    decimalNumbers: true,
    charset: 'utf8mb4',
    multipleStatements: false,
  } as const;
  const warnings: string[] = [];
  const pool = mysql.createPool({
    ...base,
    connectionLimit: options.poolSize ?? 4,
    waitForConnections: true,
  });
  // The pool's first connection is the probe (its zone and the server's version), then pinned like
  // every later one: no connection of its own to open and close before the first statement.
  let zone: string;
  let flavour: MysqlFlavour;
  try {
    const first = await pool.getConnection();
    try {
      zone = await chooseZone(first, options.appTimeZone, warnings);
      const [versionRows] = await first.query('SELECT VERSION() AS v');
      flavour = flavourOf(String((versionRows as Row[])[0]?.v ?? ''));
      await first.query('SET time_zone = ?', [zone]);
      await first.query(READ_COMMITTED);
    } finally {
      first.release();
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw connectionError(error, display);
  }
  pool.on('connection', (connection) => {
    // Queued on the new connection ahead of any statement of ours, so they run first (not awaited:
    // the pool hands the connection out meanwhile; the queue keeps the order).
    void connection.query('SET time_zone = ?', [zone]);
    void connection.query(READ_COMMITTED);
  });
  const limit = { flavour, ms: options.maxStatementTimeMs ?? DEFAULT_MAX_STATEMENT_TIME_MS };
  return new MysqlDb(pool, display, zone, warnings, limit);
}

/** The zone to pin: the app's zone if the server knows it (else its current offset), or the server's global zone. */
async function chooseZone(
  probe: mysql.Connection,
  appTimeZone: string | undefined,
  warnings: string[],
): Promise<string> {
  if (!appTimeZone) {
    const [rows] = await probe.query('SELECT @@global.time_zone AS zone');
    return String((rows as Row[])[0]?.zone ?? 'SYSTEM');
  }
  try {
    await probe.query('SET time_zone = ?', [appTimeZone]);
    return appTimeZone;
  } catch {
    const offset = offsetOfZone(appTimeZone);
    if (!offset) {
      throw new TaskreconError(`appTimeZone '${appTimeZone}' is not a time zone`, {
        code: 'CONFIG_INVALID',
        hint: "Use an IANA name such as Asia/Shanghai, or an offset such as '+08:00'.",
      });
    }
    // A zone without daylight saving (UTC, Asia/Shanghai) is its offset all year: nothing to say.
    if (observesDaylightSaving(appTimeZone))
      warnings.push(
        `the server has no time zone tables, so '${appTimeZone}' is pinned as its current offset ${offset}, ` +
          'which is wrong once its daylight saving changes; load them with mariadb-tzinfo-to-sql /usr/share/zoneinfo | mariadb mysql',
      );
    await probe.query('SET time_zone = ?', [offset]);
    return offset;
  }
}

/** Turns a driver error into a message that says what to do, with the password masked. */
export function connectionError(error: unknown, display: string): TaskreconError {
  const e = error as { code?: string; message?: string };
  const message = maskDsnText(e.message ?? String(error));
  const hints: Record<string, string> = {
    ECONNREFUSED: `Nothing listens at ${display}. Is the server running? Check host and port.`,
    ETIMEDOUT: `No answer from ${display} within the connect timeout. Check host, port and firewall.`,
    ENOTFOUND: `The host of ${display} does not resolve.`,
    ER_ACCESS_DENIED_ERROR: 'Check the user and password (or --password-file).',
    ER_BAD_DB_ERROR: 'Create the database, or fix its name in the DSN.',
    ER_DBACCESS_DENIED_ERROR: 'Grant the user access to the database.',
  };
  return new TaskreconError(`cannot connect to ${display}: ${message}`, {
    code: 'CONNECTION',
    hint: hints[e.code ?? ''] ?? 'Check the DSN given with --db, TASKRECON_DB or the config file.',
    cause: error,
  });
}

/** Wraps a failed statement on an open connection (connection lost, permission, lock wait, time limit). */
function statementError(
  error: unknown,
  display: string,
  timed?: { site: { stack?: string }; ms: number },
): unknown {
  const e = error as { code?: string; fatal?: boolean; message?: string };
  if (error instanceof TaskreconError) return error;
  if (timed && isStatementTimeout(error)) {
    return statementTimeoutError(error, statementLabel(timed.site), timed.ms);
  }
  if (
    e.fatal ||
    e.code === 'PROTOCOL_CONNECTION_LOST' ||
    e.code === 'ECONNRESET' ||
    e.code === 'ECONNREFUSED'
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
  if (e.code === 'ER_TABLEACCESS_DENIED_ERROR' || e.code === 'ER_COLUMNACCESS_DENIED_ERROR') {
    return new TaskreconError(maskDsnText(e.message ?? String(error)), {
      code: 'PERMISSION',
      hint: 'Grant the user the privileges this command needs.',
      cause: error,
    });
  }
  return error;
}

class MysqlQueryable implements Queryable {
  constructor(
    protected readonly runner: Pool | PoolConnection,
    protected readonly displayText: string,
    protected readonly limit: StatementLimit,
  ) {}

  async query<T = Row>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    const site = statementSite();
    try {
      const [rows] = await this.runner.query(
        limitStatement(sql, this.limit.flavour, this.limit.ms),
        params as unknown[],
      );
      return rows as T[];
    } catch (error) {
      throw statementError(error, this.displayText, { site, ms: this.limit.ms });
    }
  }

  async execute(sql: string, params: readonly unknown[] = []): Promise<ExecResult> {
    try {
      const [result] = await this.runner.query(sql, params as unknown[]);
      const header = result as { affectedRows?: number; insertId?: number | string };
      return { affectedRows: header.affectedRows ?? 0, insertId: header.insertId ?? 0 };
    } catch (error) {
      throw statementError(error, this.displayText);
    }
  }
}

class MysqlDb extends MysqlQueryable implements Db {
  readonly engine = mysqlEngine;
  readonly dialect = mysqlEngine.dialect;

  constructor(
    private readonly pool: Pool,
    readonly display: string,
    readonly sessionTimeZone: string,
    readonly warnings: string[],
    limit: StatementLimit,
  ) {
    super(pool, display, limit);
  }

  async *stream(
    sql: string,
    params: readonly unknown[] = [],
    options: StreamOptions = {},
  ): AsyncIterable<unknown> {
    for await (const batch of this.streamBatches(sql, params, options)) yield* batch;
  }

  /**
   * Rows straight from the driver's row events, gathered into batches of STREAM_BATCH_ROWS: no
   * stream object and no promise per row.
   */
  streamBatches(
    sql: string,
    params: readonly unknown[] = [],
    options: StreamOptions = {},
  ): AsyncIterable<unknown[]> {
    return this.pump<unknown[]>(sql, params, options.rowsAsArray ?? false, (query, out) => {
      let batch: unknown[] = [];
      query.on('result', (row: unknown) => {
        batch.push(row);
        if (batch.length >= STREAM_BATCH_ROWS) {
          out.push(batch);
          batch = [];
        }
      });
      return () => {
        if (batch.length > 0) out.push(batch);
      };
    });
  }

  /**
   * Rows from the wire into `encoder`, without the driver building a JS value per column: once
   * the column definitions are in, the driver's row parser is replaced by one that only finds
   * where each column's bytes are. Chunks of STREAM_CHUNK_BYTES come out.
   */
  streamEncoded(sql: string, params: readonly unknown[], encoder: RowEncoder): AsyncIterable<Buffer> {
    return this.pump<Buffer>(sql, params, false, (query, out) => {
      const afterRow = () => {
        if (encoder.pending >= STREAM_CHUNK_BYTES) out.push(encoder.take());
      };
      query.on('fields', (fields: unknown[]) => {
        const parser = wireRowParser(fields.length, encoder, afterRow);
        // mysql2 assigns its own parser right after this event; keep ours (the driver is pinned).
        Object.defineProperty(query, '_rowParser', {
          configurable: true,
          get: () => parser,
          set: () => undefined,
        });
      });
      return () => {
        if (encoder.pending > 0) out.push(encoder.take());
      };
    });
  }

  /**
   * Runs one query on a pooled connection and yields what `wire` pushes from its events. When
   * STREAM_MAX_QUEUED items wait unread, the socket is paused until the reader catches up, so
   * memory stays flat however many rows come. Leaving early destroys the connection.
   */
  private async *pump<T>(
    sql: string,
    params: readonly unknown[],
    rowsAsArray: boolean,
    wire: (query: QueryEvents, out: { push(item: T): void }) => () => void,
  ): AsyncIterable<T> {
    const site = statementSite();
    const connection = await this.pool.getConnection().catch((error: unknown) => {
      throw statementError(error, this.display);
    });
    const raw = connection.connection as unknown as CallbackConnection;
    const queue: T[] = [];
    let ended = false;
    let failure: unknown;
    let paused = false;
    let wake: (() => void) | undefined;
    const signal = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    const out = {
      push(item: T) {
        queue.push(item);
        if (queue.length >= STREAM_MAX_QUEUED && !paused) {
          paused = true;
          raw.pause();
        }
        signal();
      },
    };
    let finished = false;
    try {
      const limited = limitStatement(sql, this.limit.flavour, this.limit.ms);
      const query = raw.query({ sql: limited, rowsAsArray }, params as unknown[]) as unknown as QueryEvents;
      const atEnd = wire(query, out);
      query.on('error', (error: unknown) => {
        failure = error;
        signal();
      });
      query.on('end', () => {
        atEnd();
        ended = true;
        signal();
      });
      for (;;) {
        const next = queue.shift();
        if (next !== undefined) {
          if (paused && queue.length <= STREAM_MAX_QUEUED / 2) {
            paused = false;
            raw.resume();
          }
          yield next;
        } else if (failure !== undefined) {
          throw statementError(failure, this.display, { site, ms: this.limit.ms });
        } else if (ended) {
          break;
        } else {
          await new Promise<void>((resolve) => (wake = resolve));
        }
      }
      finished = true;
    } finally {
      // A stream left before its end still has rows in flight: the connection cannot be reused.
      if (finished) connection.release();
      else connection.destroy();
    }
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const connection = await this.pool.getConnection().catch((error: unknown) => {
      throw statementError(error, this.display);
    });
    try {
      await connection.query('START TRANSACTION');
      const result = await fn(new MysqlQueryable(connection, this.display, this.limit));
      await connection.query('COMMIT');
      connection.release();
      return result;
    } catch (error) {
      try {
        await connection.query('ROLLBACK');
        connection.release();
      } catch {
        connection.destroy();
      }
      throw statementError(error, this.display);
    }
  }

  async columns(table: string): Promise<ColumnInfo[] | undefined> {
    const rows = await this.query<Row>(
      `SELECT COLUMN_NAME AS name, LOWER(DATA_TYPE) AS dataType, LOWER(COLUMN_TYPE) AS columnType,
              CHARACTER_MAXIMUM_LENGTH AS maxLength, IS_NULLABLE AS nullable
         FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?
        ORDER BY ORDINAL_POSITION`,
      [table],
    );
    if (rows.length === 0) return undefined;
    return rows.map((r) => ({
      name: String(r.name),
      dataType: String(r.dataType),
      columnType: String(r.columnType),
      maxLength: r.maxLength === null ? null : Number(r.maxLength),
      nullable: r.nullable === 'YES',
    }));
  }

  async indexes(table: string): Promise<IndexInfo[]> {
    const rows = await this.query<Row>(
      `SELECT INDEX_NAME AS name, COLUMN_NAME AS col, NON_UNIQUE AS nonUnique
         FROM information_schema.STATISTICS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?
        ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
      [table],
    );
    const byName = new Map<string, IndexInfo>();
    for (const r of rows) {
      const name = String(r.name);
      const index = byName.get(name) ?? { name, columns: [], unique: Number(r.nonUnique) === 0 };
      index.columns.push(String(r.col));
      byName.set(name, index);
    }
    return [...byName.values()];
  }

  async nowEpoch(): Promise<number> {
    const rows = await this.query<{ now: number }>('SELECT UNIX_TIMESTAMP() AS now');
    return Number(rows[0]?.now);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
