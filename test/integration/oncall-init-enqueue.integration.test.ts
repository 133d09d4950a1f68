import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureTable } from '../support/fixtures.js';
import { BIN, runCli } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

// init says what it did and what to run next (beside Laravel tables too); diff --enqueue asks first.
const DRIVER = fileURLToPath(new URL('../support/compensate-pty.py', import.meta.url));
let laravel: TestSchema;
let tasks: TestSchema;
let config: string;

const pending = async () => {
  const [rows] = await tasks.sql.query('SELECT COUNT(*) AS n FROM async_task WHERE status = 0');
  return Number((rows as Array<{ n: number }>)[0]?.n);
};
const audits = async () => {
  const [rows] = await tasks.sql.query('SELECT COUNT(*) AS n FROM taskrecon_audit');
  return Number((rows as Array<{ n: number }>)[0]?.n);
};

async function drive(args: string[], steps: Array<{ expect: string; send: string }>) {
  const { stdout } = await promisify(execFile)(
    'python3',
    [DRIVER, JSON.stringify(steps), '--', process.execPath, BIN, ...args],
    { env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' }, timeout: 120_000 },
  );
  return JSON.parse(stdout) as { code: number | null; screen: string; failedStep: number | null };
}

beforeAll(async () => {
  laravel = await createTestSchema('oncall_init_laravel');
  await createFixtureTable(laravel, 'laravel_failed_jobs');
  tasks = await createTestSchema('oncall_enqueue');
  expect((await runCli(['init', '--db', tasks.dsn])).code).toBe(0);
  await tasks.sql.query(
    'CREATE TABLE user_coupon (id INT AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(64) NOT NULL, KEY (order_id))',
  );
  await tasks.sql.query(
    "INSERT INTO async_task (biz_type, biz_id, event_id, status, updated_at) VALUES ('coupon', 'A', 'ea', 2, NOW() - INTERVAL 1 HOUR), ('coupon', 'B', 'eb', 2, NOW() - INTERVAL 1 HOUR)",
  );
  await tasks.sql.query("INSERT INTO user_coupon (order_id) VALUES ('A')");
  config = join(mkdtempSync(join(tmpdir(), 'taskrecon-enqueue-')), 'taskrecon.yaml');
  writeFileSync(
    config,
    `db: ${tasks.dsn}\nrules:\n  - { name: coupon-issued, bizType: coupon, business: { table: user_coupon, key: order_id } }\n`,
  );
}, 60_000);

afterAll(async () => {
  await laravel?.drop();
  await tasks?.drop();
});

describe('init', () => {
  it("beside Laravel's failed_jobs creates taskrecon's own tables, says so on stdout, and names the next command", async () => {
    const run = await runCli(['init', '--profile', 'laravel-failed-jobs', '--db', laravel.dsn]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/created\s+taskrecon_audit/);
    expect(run.stdout).toContain('left alone failed_jobs');
    expect(run.stdout).toContain(`Next: taskrecon doctor --db ${laravel.dsn} --profile laravel-failed-jobs`);
    const again = await runCli(['init', '--profile', 'laravel-failed-jobs', '--db', laravel.dsn]);
    expect(again.stdout).toMatch(/exists\s+taskrecon_audit/);
    expect(again.stdout).toContain('Nothing to create');
  });
});

describe('diff --enqueue', () => {
  it('refuses without --yes when not on a terminal, writing nothing', async () => {
    const run = await runCli(['diff', '--config', config, '--enqueue']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('not a terminal');
    expect(run.stderr).toContain('--yes');
    expect(await pending()).toBe(0);
    expect(await audits()).toBe(0);
  });

  it('asks on a terminal: no writes nothing, yes enqueues the missing task', async () => {
    const no = await drive(
      ['diff', '--config', config, '--enqueue'],
      [{ expect: 'Send every task', send: 'n\r' }],
    );
    expect(no.failedStep, no.screen).toBeNull();
    expect(no.code).toBe(0);
    expect(no.screen).toContain('nothing changed');
    expect(await pending()).toBe(0);
    const yes = await drive(
      ['diff', '--config', config, '--enqueue'],
      [{ expect: 'Send every task', send: 'y\r' }],
    );
    expect(yes.failedStep, yes.screen).toBeNull();
    expect(await pending()).toBe(1);
    expect(await audits()).toBe(1);
  });
});
