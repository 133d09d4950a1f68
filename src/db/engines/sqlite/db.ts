import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { TaskreconError } from '../../../errors.js';
import { displayDsn, type SqliteDsn } from '../../dsn.js';
import type { ColumnInfo, Db, ExecResult, IndexInfo, Queryable, Row, StreamOptions } from '../../types.js';
import { sqliteEngine } from './index.js';

export interface SqliteOptions {
  /** Create the file if it does not exist (only `demo` and `drill` do). */
  create?: boolean;
}

/**
 * The embedded engine. SQLite has no session zone: DATETIME text is read and written as UTC,
 * which is how the sandbox stores it.
 */
export function openSqlite(dsn: SqliteDsn, options: SqliteOptions = {}): Db {
  if (!options.create && dsn.file !== ':memory:' && !existsSync(dsn.file)) {
    throw new TaskreconError(`the SQLite file ${dsn.file} does not exist`, {
      code: 'CONNECTION',
      hint: 'Build a sandbox with `taskrecon demo`, or check the path after sqlite:.',
    });
  }
  const db = new Database(dsn.file);
  try {
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
  } catch (error) {
    db.close();
    throw new TaskreconError(`${dsn.file} is not a SQLite database: ${(error as Error).message}`, {
      code: 'CONNECTION',
      hint: 'Check the path after sqlite:.',
      cause: error,
    });
  }
  return new SqliteDb(db, displayDsn(dsn));
}

function bindable(params: readonly unknown[]): unknown[] {
  return params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p));
}

class SqliteQueryable implements Queryable {
  constructor(protected readonly db: Database.Database) {}

  async query<T = Row>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    const statement = this.db.prepare(sql);
    if (!statement.reader) {
      statement.run(...bindable(params));
      return [];
    }
    return statement.all(...bindable(params)) as T[];
  }

  async execute(sql: string, params: readonly unknown[] = []): Promise<ExecResult> {
    const info = this.db.prepare(sql).run(...bindable(params));
    return { affectedRows: info.changes, insertId: Number(info.lastInsertRowid) };
  }
}

class SqliteDb extends SqliteQueryable implements Db {
  readonly engine = sqliteEngine;
  readonly dialect = sqliteEngine.dialect;
  readonly sessionTimeZone = 'UTC';
  readonly warnings: string[] = [];
  /** better-sqlite3 has one connection: transactions queue behind each other. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    db: Database.Database,
    readonly display: string,
  ) {
    super(db);
  }

  async *stream(
    sql: string,
    params: readonly unknown[] = [],
    options: StreamOptions = {},
  ): AsyncIterable<unknown> {
    const statement = this.db.prepare(sql);
    if (options.rowsAsArray) statement.raw(true);
    for (const row of statement.iterate(...bindable(params))) yield row;
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(new SqliteQueryable(this.db));
        this.db.exec('COMMIT');
        return result;
      } catch (error) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  async columns(table: string): Promise<ColumnInfo[] | undefined> {
    const rows = this.db
      .prepare(`SELECT name, type, "notnull" AS nn FROM pragma_table_info(?)`)
      .all(table) as Array<{
      name: string;
      type: string;
      nn: number;
    }>;
    if (rows.length === 0) return undefined;
    return rows.map((r) => {
      const columnType = r.type.toLowerCase();
      const match = /^([a-z ]+?)\s*(?:\((\d+)\))?$/.exec(columnType);
      return {
        name: r.name,
        dataType: (match?.[1] ?? columnType).trim(),
        columnType,
        maxLength: match?.[2] ? Number(match[2]) : null,
        nullable: r.nn === 0,
      };
    });
  }

  async indexes(table: string): Promise<IndexInfo[]> {
    const list = this.db
      .prepare(`SELECT name, "unique" AS isUnique FROM pragma_index_list(?)`)
      .all(table) as Array<{
      name: string;
      isUnique: number;
    }>;
    return list.map((index) => ({
      name: index.name,
      unique: index.isUnique === 1,
      columns: (
        this.db.prepare(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`).all(index.name) as Array<{
          name: string;
        }>
      ).map((c) => c.name),
    }));
  }

  async nowEpoch(): Promise<number> {
    const row = this.db.prepare(`SELECT ${sqliteEngine.dialect.nowEpoch} AS now`).get() as { now: number };
    return Number(row.now);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
