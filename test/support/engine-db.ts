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
  /** The column definition of an auto-incremented integer primary key `id`. */
  idColumn: string;
  /** Inserts `rows` (values in the order of `columns`) in multi-row statements of 500. */
  insertRows(table: string, columns: string[], rows: unknown[][]): Promise<void>;
  drop(): Promise<void>;
}

const ID_COLUMN: Record<TestEngine, string> = {
  mysql: 'id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY',
  postgres: 'id bigserial PRIMARY KEY',
  sqlite: 'id INTEGER PRIMARY KEY',
};

/** The helpers every engine shares, over its `run`. */
function withHelpers(db: Omit<EngineDb, 'idColumn' | 'insertRows'>): EngineDb {
  return {
    ...db,
    idColumn: ID_COLUMN[db.engine],
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
        drop: () => schema.drop(),
      });
    }
    case 'postgres': {
      const database = await createPgDatabase(prefix, options);
      return withHelpers({
        engine,
        dsn: database.dsn,
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
