import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createTestSchema } from './mariadb.js';
import { createPgDatabase } from './postgres.js';

/** The engines an engine-independent suite runs on: `describe.each(TEST_ENGINES)`. */
export const TEST_ENGINES = ['mysql', 'sqlite', 'postgres'] as const;
export type TestEngine = (typeof TEST_ENGINES)[number];

/**
 * A throw-away database on one engine, seeded and checked with the same SQL text everywhere:
 * `?` placeholders on every engine, and the few expressions that differ (times, epochs) built by
 * the helpers below. Counts and sums come back as numbers on every engine.
 */
export interface EngineDb {
  engine: TestEngine;
  /** DSN for --db or `db:` in a config. */
  dsn: string;
  /** The database's name (SQLite: its file), for checks that it is never shown. */
  name: string;
  /** Rows of one statement with `?` placeholders. */
  rows<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs one statement with `?` placeholders. */
  run(sql: string, params?: unknown[]): Promise<void>;
  /** SQL for the database's now shifted by `seconds` (negative: the past), as a time column takes it. */
  at(seconds: number): string;
  /** SQL for the epoch seconds of a time expression (`now` for the database's now). */
  epoch(expr: string): string;
  /** SQL that counts the rows where `condition` holds (0 when none). */
  countIf(condition: string): string;
  /** Inserts `rows` (values in the order of `columns`) in multi-row statements of 500. */
  insertRows(table: string, columns: string[], rows: unknown[][]): Promise<void>;
  /** Column definition of an auto-numbered primary key, for a test's own CREATE TABLE. */
  autoId: string;
  /**
   * Starts a transaction on the seeding connection that holds the rows `select` reads locked
   * (`FOR UPDATE`; SQLite: the database's write lock, BEGIN IMMEDIATE). `rollback()` ends it.
   */
  lock(select: string): Promise<{ rollback(): Promise<void> }>;
  /**
   * SQL answering `n`, the sessions waiting on a row lock; undefined on SQLite, which shows no
   * writer waiting for its lock (they sleep in their busy timeout).
   */
  lockWaits: string | undefined;
  drop(): Promise<void>;
}

/** The helpers every engine shares, over its `run`. */
function withHelpers(db: Omit<EngineDb, 'insertRows'>): EngineDb {
  return {
    ...db,
    async insertRows(table, columns, rows) {
      const tuple = `(${columns.map(() => '?').join(', ')})`;
      for (let i = 0; i < rows.length; i += 500) {
        const batch = rows.slice(i, i + 500);
        await db.run(
          `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${batch.map(() => tuple).join(', ')}`,
          batch.flat(),
        );
      }
    },
  };
}

/** One throw-away database per test file on `engine`; fails saying how to start a server that is down. */
export async function createEngineDb(
  engine: TestEngine,
  prefix: string,
  options: { timeZone?: string } = {},
): Promise<EngineDb> {
  const countIf = (condition: string) => `COALESCE(SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END), 0)`;
  switch (engine) {
    case 'mysql': {
      const schema = await createTestSchema(prefix, options);
      return withHelpers({
        engine,
        dsn: schema.dsn,
        name: schema.name,
        async rows<T>(sql: string, params: unknown[] = []) {
          const [result, fields] = await schema.sql.query(sql, params);
          return decimalsAsNumbers(result as Record<string, unknown>[], fields) as T[];
        },
        async run(sql, params = []) {
          await schema.sql.query(sql, params);
        },
        at: (seconds) => `(NOW() + INTERVAL ${Math.trunc(seconds)} SECOND)`,
        epoch: (expr) => (expr === 'now' ? 'UNIX_TIMESTAMP()' : `UNIX_TIMESTAMP(${expr})`),
        countIf,
        autoId: 'BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY',
        async lock(select) {
          await schema.sql.query('BEGIN');
          await schema.sql.query(`${select} FOR UPDATE`);
          return { rollback: async () => void (await schema.sql.query('ROLLBACK')) };
        },
        lockWaits: "SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'",
        drop: () => schema.drop(),
      });
    }
    case 'postgres': {
      // PostgreSQL reads a bare '+08:00' as a POSIX zone, 8 hours the other way: an offset is set
      // as an interval.
      const offset =
        options.timeZone && /^[+-]\d\d:\d\d$/.test(options.timeZone) ? options.timeZone : undefined;
      const database = await createPgDatabase(prefix, offset ? {} : options);
      if (offset) await database.sql.query(`SET TIME ZONE INTERVAL '${offset}' HOUR TO MINUTE`);
      return withHelpers({
        engine,
        dsn: database.dsn,
        name: database.name,
        async rows<T>(sql: string, params: unknown[] = []) {
          const result = await database.sql.query({ text: numberedPlaceholders(sql), values: params });
          return result.rows as T[];
        },
        async run(sql, params = []) {
          await database.sql.query({ text: numberedPlaceholders(sql), values: params });
        },
        at: (seconds) =>
          `(date_trunc('second', statement_timestamp()) + interval '${Math.trunc(seconds)} seconds')`,
        epoch: (expr) =>
          `FLOOR(EXTRACT(EPOCH FROM ${expr === 'now' ? 'statement_timestamp()' : expr}))::bigint`,
        countIf,
        autoId: 'BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY',
        async lock(select) {
          await database.sql.query('BEGIN');
          await database.sql.query(`${select} FOR UPDATE`);
          return { rollback: async () => void (await database.sql.query('ROLLBACK')) };
        },
        // pg_locks is read live (pg_stat_activity would answer a snapshot held for the transaction).
        lockWaits: 'SELECT COUNT(DISTINCT pid) AS n FROM pg_locks WHERE NOT granted',
        drop: () => database.drop(),
      });
    }
    case 'sqlite': {
      const dir = mkdtempSync(join(tmpdir(), `taskrecon-${prefix.replace(/[^a-z0-9_-]/gi, '_')}-`));
      const file = join(dir, 'tasks.sqlite');
      const db = new Database(file);
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 5000');
      return withHelpers({
        engine,
        dsn: `sqlite:${file}`,
        name: file,
        async rows<T>(sql: string, params: unknown[] = []) {
          return db.prepare(sql).all(...params) as T[];
        },
        async run(sql, params = []) {
          db.prepare(sql).run(...params);
        },
        at: (seconds) =>
          `datetime('now', '${Math.trunc(seconds) >= 0 ? '+' : ''}${Math.trunc(seconds)} seconds')`,
        epoch: (expr) => `CAST(strftime('%s', ${expr === 'now' ? "'now'" : expr}) AS INTEGER)`,
        countIf,
        autoId: 'INTEGER PRIMARY KEY AUTOINCREMENT',
        async lock() {
          db.exec('BEGIN IMMEDIATE');
          return { rollback: async () => void db.exec('ROLLBACK') };
        },
        lockWaits: undefined,
        async drop() {
          db.close();
          rmSync(dir, { recursive: true, force: true });
        },
      });
    }
  }
}

/** `?` → `$1…$n` outside quoted text, for PostgreSQL. */
export function numberedPlaceholders(sql: string): string {
  let out = '';
  let n = 0;
  let quote: string | undefined;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = undefined;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
    } else if (ch === '?') {
      out += `$${++n}`;
      continue;
    }
    out += ch;
  }
  return out;
}

/** MySQL's SUM answers DECIMAL, which mysql2 gives as text: as numbers, like the other engines. */
function decimalsAsNumbers(
  rows: Record<string, unknown>[],
  fields: Array<{ name: string; columnType?: number }> | undefined,
): Record<string, unknown>[] {
  const decimals = (fields ?? []).filter((f) => f.columnType === 246).map((f) => f.name);
  if (decimals.length === 0 || !Array.isArray(rows)) return rows;
  for (const row of rows) {
    for (const name of decimals) if (typeof row[name] === 'string') row[name] = Number(row[name]);
  }
  return rows;
}

// node-postgres's types for the seeding connections: counts (int8) and sums (numeric) as numbers.
pg.types.setTypeParser(20, (value: string) => {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
});
pg.types.setTypeParser(1700, (value: string) => Number(value));
