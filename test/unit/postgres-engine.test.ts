import { describe, expect, it } from 'vitest';
import { postgresWallClockToInstant } from '../../src/db/engines/postgres/ddl.js';
import { postgresDialect } from '../../src/db/engines/postgres/dialect.js';
import { postgresPlanLines, postgresReadPlan } from '../../src/db/engines/postgres/plans.js';
import {
  postgresSkipLockedVerdict,
  postgresVersionVerdict,
  splitTable,
} from '../../src/db/engines/postgres/server.js';

describe('the PostgreSQL engine', () => {
  it('reads the indexes of an EXPLAIN (FORMAT JSON) plan, and a Seq Scan as a full read', () => {
    const plan = (inner: object) => [
      { 'QUERY PLAN': JSON.stringify([{ Plan: { 'Node Type': 'Aggregate', Plans: [inner] } }]) },
    ];
    expect(
      postgresReadPlan(plan({ 'Node Type': 'Index Scan', 'Index Name': 'idx_status_next_retry' })),
    ).toEqual({
      indexes: ['idx_status_next_retry'],
      fullScan: false,
    });
    expect(postgresReadPlan(plan({ 'Node Type': 'Seq Scan', 'Relation Name': 'async_task' }))).toEqual({
      indexes: [],
      fullScan: true,
    });
  });

  it('renders a plan as EXPLAIN text lines: node, index, table, estimate and condition, children indented', () => {
    const plan = [
      {
        'QUERY PLAN': [
          {
            Plan: {
              'Node Type': 'Aggregate',
              Strategy: 'Plain',
              'Plan Rows': 1,
              Plans: [
                {
                  'Node Type': 'Index Only Scan',
                  'Index Name': 'idx_async_task_status_next_retry',
                  'Relation Name': 'async_task',
                  Alias: 'async_task',
                  'Plan Rows': 3,
                  'Index Cond': '(status = 0)',
                },
                { 'Node Type': 'Bitmap Index Scan', 'Index Name': 'idx_x', 'Plan Rows': 9 },
              ],
            },
          },
        ],
      },
    ];
    expect(postgresPlanLines(plan)).toEqual([
      'Aggregate  (rows=1)',
      '  -> Index Only Scan using idx_async_task_status_next_retry on async_task  (rows=3)',
      '       Index Cond: (status = 0)',
      '  -> Bitmap Index Scan on idx_x  (rows=9)',
    ]);
  });

  it('converts wall-clock columns to timestamptz in a named zone, and an ISO offset as an interval', () => {
    expect(postgresWallClockToInstant('app.wall_task', ['a', 'b'], 'Asia/Shanghai')).toBe(
      `ALTER TABLE "app"."wall_task" ALTER COLUMN "a" TYPE timestamptz USING "a" AT TIME ZONE 'Asia/Shanghai', ` +
        `ALTER COLUMN "b" TYPE timestamptz USING "b" AT TIME ZONE 'Asia/Shanghai';`,
    );
    expect(postgresWallClockToInstant('t', ['a'], '+08:00')).toBe(
      `ALTER TABLE "t" ALTER COLUMN "a" TYPE timestamptz USING "a" AT TIME ZONE INTERVAL '+08:00' HOUR TO MINUTE;`,
    );
  });

  it('supports PostgreSQL 13 and later, and proves SKIP LOCKED by a statement', () => {
    expect(postgresVersionVerdict('15.20 (Debian 15.20-0+deb12u1)').status).toBe('ok');
    expect(postgresVersionVerdict('13.0').status).toBe('ok');
    expect(postgresVersionVerdict('12.18').status).toBe('fail');
    expect(postgresVersionVerdict('devel').status).toBe('warn');
    expect(postgresSkipLockedVerdict('13.0')).toBeNull();
  });

  it('splits a schema-qualified table name', () => {
    expect(splitTable('pgboss.job')).toEqual({ schema: 'pgboss', name: 'job' });
    expect(splitTable('async_task')).toEqual({ schema: null, name: 'async_task' });
  });

  it('reads instants as epoch seconds and compares wall-clock columns in the session zone, the column bare', () => {
    expect(postgresDialect.epochOf('"t"', 'timestamp')).toBe('FLOOR(EXTRACT(EPOCH FROM "t"))::bigint');
    expect(postgresDialect.epochOf('"t"', 'datetime')).toBe(
      'FLOOR(EXTRACT(EPOCH FROM "t"::timestamptz))::bigint',
    );
    expect(postgresDialect.epochOf('"t"', 'unix')).toBe('"t"');
    expect(postgresDialect.epochParam('timestamp')).toBe('to_timestamp(?)');
    expect(postgresDialect.epochParam('datetime')).toBe('to_timestamp(?)::timestamp');
    expect(postgresDialect.epochParam('unix')).toBe('?');
  });

  it('reads a JSON path of text as jsonb, only when the text is shaped like an object', () => {
    expect(postgresDialect.jsonText('"payload"', '$.data.commandName')).toBe(
      `CASE WHEN "payload"::text ~ '^\\s*\\{.*\\}\\s*$' THEN ("payload"::text)::jsonb #>> '{"data","commandName"}' END`,
    );
    expect(postgresDialect.jsonText('"p"', '$.a[0]')).toContain(`#>> '{"a","0"}'`);
    expect(() => postgresDialect.jsonText('"p"', "$.a') OR 1=1 --")).toThrow(/unsafe JSON path/);
  });
});
