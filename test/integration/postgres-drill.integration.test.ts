import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { configDir } from '../fixtures/redrive/seed.js';

/**
 * Real-system mode on PostgreSQL: the drill works on a task table that also holds other tasks (a
 * due one, a stuck one — a careless drill would claim them), against the reference handler
 * running as its own process on loopback, its effect tables in the same database.
 */
const HANDLER_MAIN = fileURLToPath(
  new URL('../../dist/verbs/drill/serve-reference-handler.js', import.meta.url),
);

interface DrillJson {
  passed: number;
  failed: number;
  keptRows: number;
  target: { mode: string; db: string };
  scenarios: Array<{
    name: string;
    status: string;
    steps: Array<{ name: string; status: string; detail: string }>;
  }>;
}

let db: PgTestDatabase;
let cwd: string;
let handler: ChildProcess | undefined;

async function startHandler(): Promise<string> {
  const child = spawn(process.execPath, [HANDLER_MAIN, '--db', db.dsn, '--variant', 'idempotent'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  handler = child;
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`handler exited with ${code}`)));
  });
  return (JSON.parse(line) as { url: string }).url;
}

beforeAll(async () => {
  db = await createPgDatabase('pg_drill');
  cwd = configDir(
    [
      `db: ${db.dsn}`,
      'sources:',
      '  tasks: { profile: async-task, default: true, stuckAfter: 2m }',
      'rules:',
      '  - { name: coupon-issued, bizType: coupon, taskStatus: [success], business: { table: user_coupon, key: order_id, expect: exactly-one } }',
      '',
    ].join('\n'),
  );
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  await db.sql.query(`
    INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time, created_at, updated_at) VALUES
      ('coupon', 'PAY1', 'evt-1', 0, now() - interval '5 minutes', now() - interval '1 hour', now() - interval '5 minutes'),
      ('coupon', 'PAY2', 'evt-2', 1, now() - interval '1 hour', now() - interval '2 hours', now() - interval '1 hour')`);
});

afterAll(async () => {
  handler?.kill('SIGTERM');
  await db?.drop();
});

describe('drill against a PostgreSQL task table and a handler process', () => {
  it('passes every scenario with an idempotent handler and leaves the other tasks as they were', async () => {
    const url = await startHandler();
    const before = await db.rows(
      `SELECT id, status, retry_count, updated_at::text FROM async_task ORDER BY id`,
    );
    const { code, json, stderr } = await runJson<DrillJson>(
      ['drill', '--handler-url', url, '--diff-rule', 'coupon-issued', '--timeout', '400ms'],
      { cwd, timeoutMs: 150_000 },
    );
    const failedSteps = json.scenarios?.flatMap((s) =>
      s.steps.filter((st) => st.status === 'failed').map((st) => `${s.name}: ${st.name}: ${st.detail}`),
    );
    expect(failedSteps, stderr).toEqual([]);
    expect(code, stderr).toBe(0);
    assertMatchesSchema('drill', json);
    expect(json.target.mode).not.toBe('sandbox');
    expect(json.failed).toBe(0);
    expect(json.passed).toBe(json.scenarios.length);
    expect(
      await db.rows(`SELECT id, status, retry_count, updated_at::text FROM async_task ORDER BY id`),
    ).toEqual(before);
    expect(await db.rows(`SELECT id FROM async_task WHERE event_id LIKE 'drill-%'`)).toEqual([]);
  }, 150_000);
});
