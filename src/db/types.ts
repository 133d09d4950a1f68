import type { Dialect } from './dialect.js';

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
  /** Runs `fn` in one short READ COMMITTED transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  columns(table: string): Promise<ColumnInfo[] | undefined>;
  indexes(table: string): Promise<IndexInfo[]>;
  /** "now" from the database clock, in epoch seconds. */
  nowEpoch(): Promise<number>;
  close(): Promise<void>;
}
