import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createFixtureTable } from '../support/fixtures.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';

interface ShowJson {
  task: {
    id: number;
    status: string;
    bizType: string | null;
    lastError: string | null;
    payload: unknown;
    payloadText: string | null;
    payloadFormat: string | null;
    createdAt: string | null;
    nextRetryAt: string | null;
  };
  audit: Array<{
    action: string;
    operator: string;
    from: string | null;
    to: string | null;
    reason: string | null;
  }>;
}

let schema: TestSchema;
let cwd: string;
/** A control character other than tab, newline and carriage return (script(1) adds CR). */
const hasControl = (text: string) =>
  [...text].some((c) => {
    const code = c.charCodeAt(0);
    return (code < 0x20 && c !== '\n' && c !== '\t' && c !== '\r') || code === 0x7f;
  });
const HUGE =
  'Stack trace:\n' +
  '#0 /app/vendor/laravel/framework/src/Illuminate/Queue/Worker.php(123): handle()\n'.repeat(3000);

beforeAll(async () => {
  schema = await createTestSchema('show', { timeZone: '+08:00' });
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-show-'));
  const init = await runCli(['init', '--db', schema.dsn]);
  expect(init.code, init.stderr).toBe(0);
  await createFixtureTable(schema, 'laravel_failed_jobs');
  // Control characters in text, and a table whose last_error and payload are raw bytes (invalid UTF-8, NUL, ESC).
  await schema.sql.query(
    `INSERT INTO async_task (id, biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
     VALUES (1, 'coupon', 'order-1', 'ev-1', '{"user":7,"coupon":"NEW10"}', 3, 7, '2026-01-02 10:00:00', ?, '2026-01-02 09:00:00', '2026-01-02 10:00:00')`,
    ['HTTP 500\n\x1b[31mred\x1b[0m \x00 bell\x07'],
  );
  await schema.sql.query(`
    CREATE TABLE bin_task LIKE async_task;
    ALTER TABLE bin_task MODIFY last_error VARBINARY(512) NULL, MODIFY payload BLOB NULL;
    INSERT INTO bin_task (id, biz_type, biz_id, event_id, payload, status, last_error)
      VALUES (5, 'sms', 'b-5', 'ev-5', X'FFFE0001', 3, X'C3284E554C00FF1B5B324A');`);
  await schema.sql.query(
    `INSERT INTO failed_jobs (id, uuid, connection, queue, payload, exception, failed_at) VALUES
     (10, 'a9d1c2f0-0000-4000-8000-000000000010', 'database', 'default', 'O:8:"stdClass":0:{} not json {', ?, '2026-01-02 10:00:00')`,
    [HUGE],
  );
  await schema.sql.query(
    `INSERT INTO taskrecon_audit (operator, host, action, source, task_table, task_id, event_id, from_status, to_status, before_json, after_json, reason, run_id)
     VALUES ('alice', 'ops-1', 'mark-compensated', 'async-task', 'async_task', '1', 'ev-1', 'failed', 'compensated', '{"status":3}', '{"status":4}', 'coupon issued by hand', 'run-1'),
            ('bob', 'ops-2', 'retry', 'other-source', 'async_task_archive', '1', 'ev-1', 'failed', 'pending', NULL, NULL, 'another table', 'run-2')`,
  );
});

afterAll(async () => {
  await schema?.drop();
});

describe('show on MariaDB', () => {
  it('shows every field, the parsed payload and the audit history of this table only (task 1 of another table is not it)', async () => {
    const { code, json } = await runJson<ShowJson>(['show', '1', '--db', schema.dsn], {
      env: { TZ: 'America/New_York', TASKRECON_APP_TIME_ZONE: '+08:00' },
    });
    expect(code).toBe(0);
    assertMatchesSchema('show', json);
    expect(json.task).toMatchObject({
      id: 1,
      status: 'failed',
      bizType: 'coupon',
      payloadFormat: 'json',
      payload: { user: 7, coupon: 'NEW10' },
    });
    // The app writes DATETIMEs at +08:00 (appTimeZone): 10:00 there is 02:00 UTC.
    expect(json.task.nextRetryAt).toBe('2026-01-02T02:00:00Z');
    expect(json.task.lastError).toBe('HTTP 500\n\x1b[31mred\x1b[0m \x00 bell\x07');
    expect(json.audit).toEqual([
      expect.objectContaining({
        action: 'mark-compensated',
        operator: 'alice',
        from: 'failed',
        to: 'compensated',
        reason: 'coupon issued by hand',
      }),
    ]);
  });

  it('escapes control characters in the human view, so a value cannot drive the terminal', async () => {
    const { code, stdout } = await runCli(['show', '1', '--db', schema.dsn]);
    expect(code).toBe(0);
    expect(hasControl(stdout)).toBe(false);
    expect(stdout).toContain('\\x1b[31mred');
    expect(stdout).toContain('"coupon": "NEW10"');
    expect(stdout).toMatch(/alice\s+ops-1\s+mark-compensated\s+failed → compensated/);
  });

  it('shows binary last_error and payload bytes as replacement characters and escapes, not a crash', async () => {
    const json = await runJson<ShowJson>(['show', '5', '--db', schema.dsn, '--table', 'bin_task']);
    expect(json.code).toBe(0);
    assertMatchesSchema('show', json.json);
    expect(json.json.task.lastError).toContain('\uFFFD');
    expect(json.json.task.payloadFormat).toBe('text');
    const human = await runCli(['show', '5', '--db', schema.dsn, '--table', 'bin_task']);
    expect(human.code).toBe(0);
    expect(hasControl(human.stdout)).toBe(false);
    expect(human.stdout).toContain('\\x00');
  });

  it('finds a task by its event id too (Laravel uuid, async_task event_id)', async () => {
    const byUuid = await runJson<ShowJson>([
      'show',
      'a9d1c2f0-0000-4000-8000-000000000010',
      '--db',
      schema.dsn,
      '--profile',
      'laravel-failed-jobs',
    ]);
    expect(byUuid.code).toBe(0);
    expect(byUuid.json.task.id).toBe(10);
    const byEvent = await runJson<ShowJson>(['show', 'ev-1', '--db', schema.dsn]);
    expect(byEvent.json.task.id).toBe(1);
    expect(byEvent.json.audit).toHaveLength(1);
  });

  it("shows a Laravel failed job's non-JSON payload as text and its huge exception whole when piped", async () => {
    const { code, json } = await runJson<ShowJson>([
      'show',
      '10',
      '--db',
      schema.dsn,
      '--profile',
      'laravel-failed-jobs',
    ]);
    expect(code).toBe(0);
    assertMatchesSchema('show', json);
    expect(json.task.payloadFormat).toBe('text');
    expect(json.task.payload).toBeNull();
    expect(json.task.payloadText).toBe('O:8:"stdClass":0:{} not json {');
    expect(json.task.lastError).toHaveLength(HUGE.length);
    const human = await runCli(['show', '10', '--db', schema.dsn, '--profile', 'laravel-failed-jobs']);
    expect(human.stdout).toContain('Payload (not JSON: shown as text)');
    expect(human.stdout.length).toBeGreaterThan(HUGE.length);
  });

  it('cuts a huge last error on a terminal only, saying how to see it all', async () => {
    // Through a pseudo-terminal (script(1)), stdout is a TTY.
    const command = `node bin/run.js show 10 --db '${schema.dsn}' --profile laravel-failed-jobs --no-color`;
    const viaPty = await new Promise<string>((resolve, reject) =>
      execFile(
        'script',
        ['-qec', command, '/dev/null'],
        { env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' }, maxBuffer: 10_000_000 },
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      ),
    );
    expect(viaPty).toContain('more characters (--full, a pipe or --json shows all)');
    expect(viaPty.length).toBeLessThan(HUGE.length / 2);
  });

  it('exits 3 with a clear message when no task has the id, and when the id cannot be one', async () => {
    const missing = await runCli(['show', '999', '--db', schema.dsn]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('task 999 not found in async_task');
    expect(missing.stderr).not.toMatch(/\n\s+at /);
    const json = await runJson(['show', '999', '--db', schema.dsn]);
    expect(json.code).toBe(3);
    assertMatchesSchema('error', json.json);
    const bad = await runCli(['show', '1; DROP TABLE async_task', '--db', schema.dsn]);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain('not found in async_task (source async-task), by id or event id');
    const [tables] = (await schema.sql.query("SHOW TABLES LIKE 'async_task'")) as unknown as [unknown[]];
    expect(tables).toHaveLength(1);
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      'sources:\n  plain: { profile: async-task, columns: { eventId: null } }\n',
    );
    const noEventId = await runCli(['show', 'abc', '--db', schema.dsn], { cwd });
    expect(noEventId.code).toBe(3);
    expect(noEventId.stderr).toContain("'abc' is not a task id");
  });
});

describe('show on SQLite', () => {
  it('shows a task of the embedded engine with its payload', async () => {
    const file = join(cwd, 'show.sqlite');
    const init = await runCli(['init', '--db', `sqlite:${file}`]);
    expect(init.code, init.stderr).toBe(0);
    const db = new Database(file);
    db.prepare(
      `INSERT INTO async_task (id, biz_type, biz_id, event_id, payload, status, next_retry_time, last_error) VALUES (3, 'points', 'p-3', 'ev-3', '{"points":100}', 0, '2026-01-02 10:00:00', NULL)`,
    ).run();
    db.close();
    const { code, json } = await runJson<ShowJson>(['show', '3', '--db', `sqlite:${file}`]);
    expect(code).toBe(0);
    assertMatchesSchema('show', json);
    expect(json.task).toMatchObject({
      id: 3,
      status: 'pending',
      payload: { points: 100 },
      nextRetryAt: '2026-01-02T10:00:00Z',
      lastError: null,
    });
  });
});
