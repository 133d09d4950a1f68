import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mysql from 'mysql2/promise';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson, type CliResult } from '../support/cli.js';
import { createTestSchema, TEST_SERVER, type TestSchema } from '../support/mariadb.js';
import type { ScanJson } from '../support/scan-json.js';
import { assertMatchesSchema } from '../support/schemas.js';

let schema: TestSchema;
let cwd: string;
const PASSWORD_USER = `tr_pw_${process.pid}`;
const REAL_PASSWORD = 'Corr3ct-horse';
const WRONG_PASSWORD = 'hunter2-wrong';

/** Exit 3, a message on stderr, no stack trace. */
function expectCouldNotRun(result: CliResult, ...fragments: string[]): void {
  expect(result.code, result.stderr).toBe(3);
  for (const fragment of fragments) expect(result.stderr).toContain(fragment);
  expect(result.stderr).not.toMatch(/\n\s+at /);
  expect(result.stdout).toBe('');
}

async function expectJsonError(args: string[], options: Parameters<typeof runJson>[1] = {}) {
  const { code, json } = await runJson<{ error: { message: string; hint: string | null } }>(args, options);
  expect(code).toBe(3);
  assertMatchesSchema('error', json);
  return json.error;
}

beforeAll(async () => {
  schema = await createTestSchema('bad_input');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bad-'));
  const init = await runCli(['init', '--db', schema.dsn]);
  expect(init.code, init.stderr).toBe(0);
  await schema.sql.query(`
    CREATE TABLE text_times LIKE async_task;
    ALTER TABLE text_times MODIFY next_retry_time VARCHAR(32) NOT NULL;
    CREATE TABLE odd_rows LIKE async_task;
    ALTER TABLE odd_rows MODIFY last_error LONGBLOB NULL, MODIFY payload LONGTEXT NULL;`);
  await schema.sql.query(
    `INSERT INTO odd_rows (biz_type, biz_id, event_id, payload, status, last_error) VALUES
       ('sms', 'binary', 'e1', 'not json at all {', 3, X'00FFFE1B5B324A07C328'),
       ('sms', 'huge',   'e2', '{"ok":true}',      3, ?)`,
    [`Fatal error: ${'x'.repeat(200_000)}`],
  );
  const admin = await mysql.createConnection({ uri: TEST_SERVER });
  await admin.query(
    `CREATE USER IF NOT EXISTS '${PASSWORD_USER}'@'127.0.0.1' IDENTIFIED BY '${REAL_PASSWORD}'`,
  );
  await admin.end();
});

afterAll(async () => {
  const admin = await mysql.createConnection({ uri: TEST_SERVER });
  await admin.query(`DROP USER IF EXISTS '${PASSWORD_USER}'@'127.0.0.1'`);
  await admin.end();
  await schema?.drop();
});

describe('connection problems exit 3 with a clear message', () => {
  it('masks a wrong password in the message and in JSON', async () => {
    const dsn = `mysql://${PASSWORD_USER}:${WRONG_PASSWORD}@127.0.0.1:3306/${schema.name}`;
    const result = await runCli(['scan', '--db', dsn]);
    expectCouldNotRun(
      result,
      'cannot connect',
      `${PASSWORD_USER}:***@127.0.0.1`,
      'Check the user and password',
    );
    expect(result.stderr).not.toContain(WRONG_PASSWORD);
    const error = await expectJsonError(['doctor', '--db', dsn]);
    expect(JSON.stringify(error)).not.toContain(WRONG_PASSWORD);
  });

  it('gives up on a loopback listener that never answers within the connect timeout', async () => {
    const sockets: Socket[] = [];
    const server: Server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), 'connectTimeout: 2s\n');
    try {
      const started = Date.now();
      const result = await runCli(['scan', '--db', `mysql://app:pw@127.0.0.1:${port}/shop`], {
        cwd,
        timeoutMs: 40_000,
      });
      const elapsed = Date.now() - started;
      expectCouldNotRun(result, 'cannot connect to mysql://app:***@127.0.0.1');
      // Start-up takes a few seconds on a loaded machine; without the 2s timeout the connect hangs until killed.
      expect(elapsed).toBeLessThan(25_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('says nothing listens on a closed loopback port', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    const result = await runCli(['scan', '--db', `mysql://root@127.0.0.1:${port}/shop`]);
    expectCouldNotRun(result, 'cannot connect', 'Nothing listens');
  });
});

describe('bad names and config exit 3 with a clear message', () => {
  it('refuses an unknown profile, from a flag and from the config', async () => {
    expectCouldNotRun(await runCli(['scan', '--db', schema.dsn, '--profile', 'laravel-job']), 'laravel-job');
    const dir = mkdtempSync(join(tmpdir(), 'taskrecon-bad-profile-'));
    writeFileSync(
      join(dir, 'taskrecon.config.yaml'),
      `db: ${schema.dsn}\nsources:\n  q: { profile: laravel-job }\n`,
    );
    expectCouldNotRun(await runCli(['scan'], { cwd: dir }), "unknown profile 'laravel-job'", 'laravel-jobs');
  });

  it('refuses an unknown source, suggesting the closest', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskrecon-bad-source-'));
    writeFileSync(
      join(dir, 'taskrecon.config.yaml'),
      `db: ${schema.dsn}\nsources:\n  tasks: { profile: async-task }\n  failed: { profile: laravel-failed-jobs }\n`,
    );
    expectCouldNotRun(
      await runCli(['scan', '--source', 'taks'], { cwd: dir }),
      "unknown source 'taks'",
      "Did you mean 'tasks'?",
    );
    const error = await expectJsonError(['scan', '--source', 'taks'], { cwd: dir });
    expect(error.hint).toContain('tasks');
  });

  it('names a mistyped config key and the one it meant', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskrecon-bad-key-'));
    writeFileSync(join(dir, 'taskrecon.config.yaml'), `db: ${schema.dsn}\nappTimeZon: Asia/Shanghai\n`);
    expectCouldNotRun(
      await runCli(['scan'], { cwd: dir }),
      "unknown key 'appTimeZon'",
      "Did you mean 'appTimeZone'?",
    );
  });

  it('refuses a missing table and a column of the wrong type, naming them', async () => {
    expectCouldNotRun(
      await runCli(['scan', '--db', schema.dsn, '--table', 'nope']),
      "table 'nope' does not exist",
      'taskrecon doctor',
    );
    expectCouldNotRun(
      await runCli(['show', '1', '--db', schema.dsn, '--table', 'text_times']),
      "column 'next_retry_time' (nextRetryAt) is varchar(32)",
    );
    const error = await expectJsonError(['scan', '--db', schema.dsn, '--table', 'text_times']);
    expect(error.message).toContain('expected DATETIME, TIMESTAMP or an integer of unix seconds');
  });

  it('refuses --limit -1 and --stuck-after 5x, naming the flag', async () => {
    expectCouldNotRun(await runCli(['scan', '--db', schema.dsn, '--limit', '-1']), '--limit');
    expectCouldNotRun(
      await runCli(['scan', '--db', schema.dsn, '--stuck-after', '5x']),
      '--stuck-after',
      "'5x' is not a duration",
    );
    const error = await expectJsonError(['scan', '--db', schema.dsn, '--stuck-after', '5x']);
    expect(error.hint).toContain('10m');
    expect(error.message).toBe("--stuck-after: '5x' is not a duration");
  });
});

describe('odd rows are displayed safely', () => {
  it('scans rows with a non-JSON payload, binary and huge last_error values', async () => {
    const { code, json } = await runJson<ScanJson>(['scan', '--db', schema.dsn, '--table', 'odd_rows']);
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    const [binary, huge] = json.failed;
    expect(binary?.lastError).toContain('\uFFFD');
    expect(huge?.lastError?.length).toBeLessThanOrEqual(1000);
    const table = await runCli(['scan', '--db', schema.dsn, '--table', 'odd_rows']);
    expect(table.code).toBe(0);
    expect([...table.stdout].some((c) => c === '\x1b' || c === '\x00' || c === '\x07')).toBe(false);
    expect(table.stdout).toContain('\\x1b');
    expect(table.stdout.length).toBeLessThan(10_000);
    const ndjson = await runCli(['scan', '--db', schema.dsn, '--table', 'odd_rows', '--format', 'ndjson']);
    expect(ndjson.code).toBe(0);
    const lines = ndjson.stdout.trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { bizId: string }).bizId)).toEqual(['binary', 'huge']);
  });
});
