import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

interface ErrorJson {
  error: { code: string; message: string; hint: string | null; exit: number };
}

let db: PgTestDatabase;

beforeAll(async () => {
  db = await createPgDatabase('pg_limit');
  const init = await runCli(['init', '--db', db.dsn]);
  expect(init.code, init.stderr).toBe(0);
  await db.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time)
     SELECT 'coupon', 'order-' || n, 'slow-' || n, 0, now() - interval '1 minute' FROM generate_series(1, 25) AS n`,
  );
  // Every row read through this view costs 0.4 s: a whole read of it takes 10 s.
  await db.sql.query(`CREATE FUNCTION slow_row(bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    BEGIN PERFORM pg_sleep(0.4); RETURN true; END $$`);
  await db.sql.query('CREATE VIEW slow_task AS SELECT * FROM async_task WHERE slow_row(id)');
});

afterAll(async () => {
  await db?.drop();
});

const slowScan = ['scan', '--profile', 'async-task', '--table', 'slow_task'];

describe('the statement time limit on PostgreSQL', () => {
  it('stops a slow scan statement within about the limit, exit 3, naming the statement and an index', async () => {
    const started = Date.now();
    const run = await runJson<ErrorJson>([...slowScan, '--db', db.dsn, '--max-statement-time', '1s']);
    const elapsed = Date.now() - started;
    expect(run.code, run.stderr).toBe(3);
    expect(run.json.error.code).toBe('STATEMENT_TIMEOUT');
    expect(run.json.error.message).toMatch(
      /statement scan(-counts)?\.count\w+ ran longer than the 1s statement time limit/,
    );
    expect(run.json.error.hint).toMatch(/index on \(/);
    // One second of statement plus a node process's start-up, never the 10 s the view needs.
    expect(elapsed).toBeLessThan(6000);
  });

  it('ends an ndjson stream with the error line and exit 3', async () => {
    const run = await runCli([
      ...slowScan,
      '--db',
      db.dsn,
      '--status',
      'pending',
      '--limit',
      '0',
      '--format',
      'ndjson',
      '--max-statement-time',
      '1s',
    ]);
    expect(run.code, run.stderr).toBe(3);
    const lines = run.stdout.trim().split('\n');
    const last = JSON.parse(lines[lines.length - 1] as string) as ErrorJson;
    expect(last.error.code).toBe('STATEMENT_TIMEOUT');
    expect(run.stderr).toMatch(/statement time limit/);
  });

  it('lets a fast scan finish under the same limit', async () => {
    const run = await runJson<{ summary: { total: number } }>([
      'scan',
      '--db',
      db.dsn,
      '--max-statement-time',
      '1s',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.summary.total).toBe(25);
  });
});
