import type { Dialect } from './dialect.js';
import type { Engine } from './engines/types.js';

export type Row = Record<string, unknown>;

export interface ExecResult {
  affectedRows: number;
  insertId: number | string;
}

/** What a statement can run on: the database, or one transaction of it. */
export interface Queryable {
  query<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  execute(sql: string, params?: readonly unknown[]): Promise<ExecResult>;
}

export interface StreamOptions {
  /** Rows as arrays in SELECT order (faster) instead of objects. */
  rowsAsArray?: boolean;
}

/**
 * Turns rows into output bytes straight from the wire, without building JS values: column `i` of a
 * row is `buf[starts[i], ends[i])` as the server sent it in the text protocol (UTF-8 text, numbers
 * as decimal digits), or SQL NULL when `starts[i]` is -1.
 */
export interface RowEncoder {
  encode(buf: Buffer, starts: Int32Array, ends: Int32Array): void;
  /** Bytes encoded and not yet taken. */
  readonly pending: number;
  /** Takes the bytes encoded so far. */
  take(): Buffer;
}

export interface ColumnInfo {
  name: string;
  /** Lower-case base type: int, bigint, tinyint, varchar, text, datetime, timestamp, enum, json, … */
  dataType: string;
  /** The full column type, e.g. `varchar(512)`, `enum('a','b')`. */
  columnType: string;
  maxLength: number | null;
  nullable: boolean;
}

export interface IndexInfo {
  name: string;
  columns: string[];
  unique: boolean;
}

/** One connection to a task database, whichever the engine. */
export interface Db extends Queryable {
  /** Everything that differs between engines: ask it instead of comparing engine names. */
  readonly engine: Engine;
  /** The engine's SQL text (`engine.dialect`). */
  readonly dialect: Dialect;
  /** The DSN with its password masked. */
  readonly display: string;
  /** The zone every session of this connection is pinned to. */
  readonly sessionTimeZone: string;
  /** Warnings met while connecting (e.g. a named zone the server does not know). */
  readonly warnings: string[];
  /** Streams a query's rows with backpressure; stopping early releases the connection. */
  stream(sql: string, params?: readonly unknown[], options?: StreamOptions): AsyncIterable<unknown>;
  /**
   * The same rows in batches (arrays of rows, in order), for hot paths that handle millions of rows:
   * one await per batch instead of per row. Optional: callers fall back to `stream`.
   */
  streamBatches?(sql: string, params?: readonly unknown[], options?: StreamOptions): AsyncIterable<unknown[]>;
  /**
   * A query's rows through `encoder`, as chunks of its output bytes (the fastest path, for dumps
   * of millions of rows). Optional: only engines with a wire protocol to read have it.
   */
  streamEncoded?(sql: string, params: readonly unknown[], encoder: RowEncoder): AsyncIterable<Buffer>;
  /**
   * The same from each value as the server prints it as text (PostgreSQL's `COPY … TO STDOUT`):
   * text, integers and JSON come as streamEncoded would give them, but binary values in their text
   * form (`\x…`), so only reads of text, integer and JSON columns use it (the NDJSON lists).
   * Optional: engines without a text copy protocol lack it.
   */
  streamTextEncoded?(sql: string, params: readonly unknown[], encoder: RowEncoder): AsyncIterable<Buffer>;
  /** Runs `fn` in one short READ COMMITTED transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  columns(table: string): Promise<ColumnInfo[] | undefined>;
  indexes(table: string): Promise<IndexInfo[]>;
  /** "now" from the database clock, in epoch seconds. */
  nowEpoch(): Promise<number>;
  close(): Promise<void>;
}
