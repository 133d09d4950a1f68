import { describe, expect, it } from 'vitest';
import { postgresDialect } from '../../src/db/engines/postgres/dialect.js';
import {
  postgresReadPlan,
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
