import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { seedDueTasks } from '../fixtures/redrive/seed.js';

interface ErrorJson {
  error: { code: string; message: string; hint: string | null; exit: number };
}

let schema: TestSchema;

/** What a run could have written: the task rows and the audit log, as a checksum each. */
async function written(): Promise<string> {
  const [rows] = await schema.sql.query('CHECKSUM TABLE async_task, taskrecon_audit');
  return JSON.stringify(rows);
}

beforeAll(async () => {
  schema = await createTestSchema('production_limit');
  const init = await runCli(['init', '--db', schema.dsn]);
  expect(init.code, init.stderr).toBe(0);
  await seedDueTasks(schema.sql, 20, { prefix: 'slow' });
  await seedDueTasks(schema.sql, 5, { prefix: 'dead', status: 3 });
  // Every row read through this view costs 0.4 s: a whole read of it takes 10 s.
  await schema.sql.query('CREATE VIEW slow_task AS SELECT * FROM async_task WHERE SLEEP(0.4) = 0');
});

afterAll(async () => {
  await schema?.drop();
});

const slowScan = ['scan', '--profile', 'async-task', '--table', 'slow_task'];

describe('the statement time limit', () => {
  it('stops a slow scan statement within about the limit, exit 3, naming the statement and an index; nothing written', async () => {
    const before = await written();
    const started = Date.now();
    const run = await runJson<ErrorJson>([...slowScan, '--db', schema.dsn, '--max-statement-time', '1s']);
    const elapsed = Date.now() - started;
    expect(run.code, run.stderr).toBe(3);
    expect(run.json.error.code).toBe('STATEMENT_TIMEOUT');
    expect(run.json.error.message).toMatch(
      /statement scan(-counts)?\.count\w+ ran longer than the 1s statement time limit/,
    );
    expect(run.json.error.hint).toMatch(/index on \(/);
    expect(run.json.error.hint).toMatch(/taskrecon doctor/);
    // One second of statement plus the start-up of a node process (seconds on a loaded host), never
    // the 10 s the view needs.
    expect(elapsed).toBeLessThan(6000);
    expect(await written()).toBe(before);
  });

  it('ends an ndjson stream with the error line and exit 3, never a short list that looks complete', async () => {
    const run = await runCli([
      ...slowScan,
      '--db',
      schema.dsn,
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
    expect(last.error.message).toMatch(/statement scan\.list\w+/);
    expect(run.stderr).toMatch(/statement time limit/);
  });

  it('takes the limit from config maxStatementTime', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-limit-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${schema.dsn}\nmaxStatementTime: 1s\n`);
    const run = await runJson<ErrorJson>(slowScan, { cwd });
    expect(run.code, run.stderr).toBe(3);
    expect(run.json.error.code).toBe('STATEMENT_TIMEOUT');
  });

  it('lets the same statements finish under a limit they fit in (the check can pass)', async () => {
    const run = await runJson<{ summary: { total: number } }>([
      'scan',
      '--db',
      schema.dsn,
      '--profile',
      'async-task',
      '--max-statement-time',
      '1s',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.summary.total).toBe(25);
  });
});
