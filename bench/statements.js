/**
 * The exact SQL taskrecon sends for a scan, captured by running the real statement builders of the
 * built code (dist/) against a recording connection, for MySQL or PostgreSQL. The raw baselines
 * run these same statements in the `mariadb` client or `psql`, so a change to the queries changes
 * both sides of a benchmark alike.
 */
import mysql from 'mysql2';
import { mysqlDialect } from '../dist/db/engines/mysql/dialect.js';
import { postgresDialect } from '../dist/db/engines/postgres/dialect.js';
import { sqlLiteral } from '../dist/db/engines/postgres/copy.js';
import { inlinePlaceholders } from '../dist/db/engines/postgres/placeholders.js';
import { asyncTask } from '../dist/db/profiles/builtin.js';
import { TaskSql } from '../dist/db/task-sql.js';
import { ALL_LISTS, scanSummary, streamList } from '../dist/verbs/scan/scan.js';

const TEN_MINUTES_MS = 10 * 60_000;

/**
 * Each engine's SQL text and how a statement's parameters are inlined: MySQL's own formatter, and
 * on PostgreSQL the literals the COPY fast path inlines (its columns are `timestamptz`, as `init` makes them).
 */
const ENGINES = {
  mysql: { dialect: mysqlDialect, format: (sql, params) => mysql.format(sql, params), timeType: 'datetime' },
  postgres: {
    dialect: postgresDialect,
    format: (sql, params) => inlinePlaceholders(sql, params, sqlLiteral),
    timeType: 'timestamp',
  },
};

function recordingSource(table, engine = 'mysql') {
  const { dialect, format, timeType } = ENGINES[engine];
  const statements = [];
  const record = (sql, params) => statements.push(format(sql, params ?? []));
  const db = {
    dialect,
    display: 'bench',
    async query(sql, params) {
      record(sql, params);
      return [];
    },
    stream(sql, params) {
      record(sql, params);
      return (async function* () {})();
    },
  };
  const profile = { ...asyncTask, table };
  const sql = new TaskSql(dialect, profile, {
    nextRetryAt: timeType,
    createdAt: timeType,
    updatedAt: timeType,
  });
  return { source: { name: 'bench', profile, db, sql, columns: [], problems: [] }, statements };
}

function options(nowEpoch) {
  return { nowEpoch, stuckAfterMs: TEN_MINUTES_MS, limit: 0, lists: ALL_LISTS };
}

/** The summary statements of `scan` (counts by biz type and status, due, stuck), parameters inlined. */
export async function summaryStatements(table, nowEpoch, engine = 'mysql') {
  const { source, statements } = recordingSource(table, engine);
  await scanSummary(source, options(nowEpoch));
  return statements;
}

/**
 * The list statements of `scan --limit 0` (stuck, due, failed), parameters inlined, each the first
 * page's statement with its LIMIT removed: the whole list in one query, in the same index order.
 */
export async function listStatements(table, nowEpoch, engine = 'mysql') {
  const { source, statements } = recordingSource(table, engine);
  for (const kind of ALL_LISTS) {
    const rows = streamList(source, kind, options(nowEpoch));
    if (rows) for await (const _row of rows) void _row;
  }
  return statements.map((s) => s.replace(/ LIMIT \d+$/, ''));
}
