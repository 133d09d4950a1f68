import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';
import {
  startCountingHandler,
  closedLoopbackPort,
  type CountingHandler,
} from '../fixtures/redrive/counting-handler.js';
import { configDir } from '../fixtures/redrive/seed.js';
import { DEFAULT_SCHEDULE_MS, RetryPolicies } from '../../src/core/backoff.js';
import { connect } from '../../src/db/connect.js';
import { bindSource } from '../../src/db/bind-source.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { registryOf } from '../../src/dispatch/registry.js';
import { HttpDispatcher } from '../../src/dispatch/http.js';
import { runRedrive } from '../../src/ops/redrive/redrive.js';

interface RetryLine {
  attempt: number;
  waitSeconds: number;
  eventId: string;
  error: string;
}

// The app writes DATETIMEs in +08:00; the CLI runs in New York: next_retry_time must follow the database clock regardless.
const APP_ZONE = '+08:00';
const PROCESSOR = fileURLToPath(new URL('../fixtures/redrive/processor.js', import.meta.url));
const ENV = { TZ: 'America/New_York' };

interface RedriveJson {
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  lostRace: number;
  recoveredStuck: number;
  dryRun: boolean;
  unhandled: Array<{ bizType: string | null; count: number }>;
}

let schema: TestSchema;
let handler: CountingHandler;
let cwd: string;
let refusedPort: number;

async function row(eventId: string) {
  const [rows] = await schema.sql.query(
    `SELECT status, retry_count AS attempts, last_error AS lastError, UNIX_TIMESTAMP(next_retry_time) AS nrt,
            UNIX_TIMESTAMP(updated_at) AS upd, UNIX_TIMESTAMP() AS now FROM async_task WHERE event_id = ?`,
    [eventId],
  );
  const r = (rows as Array<Record<string, unknown>>)[0];
  if (!r) throw new Error(`no row ${eventId}`);
  return {
    status: Number(r.status),
    attempts: Number(r.attempts),
    lastError: r.lastError as string | null,
    nrt: Number(r.nrt),
    upd: Number(r.upd),
    now: Number(r.now),
  };
}

async function insert(bizType: string, eventId: string, payload = '{"orderId":1}', status = 0) {
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, NOW() - INTERVAL 5 SECOND, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 1 HOUR)`,
    [bizType, `biz-${eventId}`, eventId, payload, status],
  );
}

function redrive(args: string[] = []) {
  return runJson<RedriveJson>(['redrive', '--pause', '0ms', ...args], { cwd, env: ENV });
}

beforeAll(async () => {
  schema = await createTestSchema('redrive_outcomes', { timeZone: APP_ZONE });
  refusedPort = await closedLoopbackPort();
  handler = await startCountingHandler({
    behaviour: (d) => {
      const id = d.eventId ?? '';
      if (id.startsWith('always-503'))
        return { status: 503, body: `upstream unavailable ${'x'.repeat(400)}` };
      if (id.startsWith('gone')) return { status: 404 };
      if (id.startsWith('throttled')) return { status: 429, retryAfter: '120' };
      return { status: 200 };
    },
  });
  cwd = configDir(
    [
      `db: ${schema.dsn}`,
      `appTimeZone: "${APP_ZONE}"`,
      'handlers:',
      `  coupon: { type: http, url: "${handler.url}", timeout: 5s }`,
      `  refused: { type: http, url: "http://127.0.0.1:${refusedPort}/tasks", timeout: 2s }`,
      `  sms: { type: command, argv: [node, "${PROCESSOR}", "{bizId}"], timeout: 3s }`,
      '  points: { type: mark-only }',
      '',
    ].join('\n'),
  );
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  // A last_error column shorter than the seed's 512: truncation must follow the live schema, not the seed.
  await schema.sql.query('ALTER TABLE async_task MODIFY last_error VARCHAR(80) NULL');
});

afterAll(async () => {
  await handler?.close();
  await schema?.drop();
});

beforeEach(async () => {
  await schema.sql.query('DELETE FROM async_task');
  handler.reset();
});

describe('redrive outcomes on MariaDB', () => {
  it('a task that always fails retryably follows the seed schedule against the database clock, then ends failed', async () => {
    await insert('coupon', 'always-503');
    const waits: number[] = [];
    // The first attempt through the CLI (a real process, its JSON and its log line); the other seven in
    // process through the same runRedrive, so the test stays quick. Each is checked against the database clock.
    const db = await connect(schema.dsn, { appTimeZone: APP_ZONE });
    const source = await bindSource(db, asyncTask, 'async-task');
    const dispatchers = registryOf({ coupon: new HttpDispatcher({ url: handler.url, timeoutMs: 5000 }) });
    const runAttempt = async (attempt: number) => {
      if (attempt === 1) {
        const { code, json, stderr } = await redrive(['--log-format', 'json']);
        // Every attempt of the run failed (the one task was retried): exit 1, so cron mails.
        expect(code, stderr).toBe(1);
        assertMatchesSchema('redrive', json);
        const line = stderr.split('\n').find((l) => l.includes('"task_retry"'));
        return { json, logged: line ? (JSON.parse(line) as RetryLine) : undefined };
      }
      const events: RetryLine[] = [];
      const json = await runRedrive(source, {
        batch: 500,
        pauseMs: 0,
        concurrency: 4,
        leaseSeconds: 300,
        stuckAfterMs: 600_000,
        dryRun: false,
        dispatchers,
        policies: RetryPolicies.fromConfig(undefined),
        log: (e) => {
          if (e.event === 'task_retry') events.push(e as RetryLine);
        },
      });
      return { json, logged: events[0] };
    };
    for (let attempt = 1; attempt <= 8; attempt++) {
      const { json, logged } = await runAttempt(attempt);
      expect(json.claimed).toBe(1);
      const r = await row('always-503');
      expect(r.attempts).toBe(attempt);
      expect(Array.from(r.lastError ?? '').length).toBeLessThanOrEqual(80);
      expect(r.lastError).toMatch(
        /^HTTP 503 from http:\/\/127\.0\.0\.1:\d+\/tasks: upstream unavailable x+…$/,
      );
      if (attempt < 8) {
        expect(r.status).toBe(0);
        expect(json.retried).toBe(1);
        const base = (DEFAULT_SCHEDULE_MS[attempt - 1] as number) / 1000;
        // next_retry_time = database now at the write + the wait; updated_at is that same now (same statement, ±1s).
        const wait = r.nrt - r.upd;
        expect(wait).toBeGreaterThanOrEqual(base - 1);
        expect(wait).toBeLessThanOrEqual(Math.ceil(base * 1.1) + 1);
        if (!logged) throw new Error(`no task_retry logged at attempt ${attempt}`);
        expect(logged).toMatchObject({ attempt, eventId: 'always-503' });
        expect(logged.waitSeconds).toBeGreaterThanOrEqual(base);
        expect(logged.waitSeconds).toBeLessThanOrEqual(Math.ceil(base * 1.1));
        expect(r.nrt - logged.waitSeconds).toBeGreaterThanOrEqual(r.upd - 1);
        expect(r.nrt - logged.waitSeconds).toBeLessThanOrEqual(r.upd);
        waits.push(logged.waitSeconds);
        // Not due yet (16s to go): a run now claims nothing.
        if (attempt === 3) expect((await redrive()).json.claimed).toBe(0);
        // Fast-forward instead of sleeping.
        await schema.sql.query(
          "UPDATE async_task SET next_retry_time = NOW() - INTERVAL 1 SECOND WHERE event_id = 'always-503'",
        );
      } else {
        expect(r.status).toBe(3);
        expect(json.failed).toBe(1);
      }
    }
    expect(waits.map((w, i) => w >= (DEFAULT_SCHEDULE_MS[i] as number) / 1000)).toEqual(Array(7).fill(true));
    expect(handler.deliveries.get('always-503')).toBe(8);
    expect([...handler.byAttempt.keys()].sort()).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8].map((a) => `always-503#${a}`).sort(),
    );
    await dispatchers.close();
    await db.close();
  }, 150_000);

  it('a permanent error goes straight to failed; success ends success; a connection refused is retried', async () => {
    await insert('coupon', 'gone-1');
    await insert('coupon', 'fine-1');
    await insert('refused', 'refused-1');
    const { code, json } = await redrive();
    expect(code).toBe(0);
    expect(json).toMatchObject({ claimed: 3, succeeded: 1, failed: 1, retried: 1, lostRace: 0 });
    expect(await row('gone-1')).toMatchObject({ status: 3, attempts: 1 });
    expect((await row('gone-1')).lastError).toMatch(/^HTTP 404/);
    expect(await row('fine-1')).toMatchObject({ status: 2, attempts: 0 });
    const refused = await row('refused-1');
    expect(refused).toMatchObject({ status: 0, attempts: 1 });
    expect(refused.lastError).toMatch(/ECONNREFUSED/);
    expect(handler.deliveries.get('gone-1')).toBe(1);
  });

  it('honours Retry-After and sends the contract body with an Idempotency-Key', async () => {
    await insert('coupon', 'throttled-1', '{"orderId":42,"note":"中文"}');
    const seen: unknown[] = [];
    handler.setBehaviour((d) => {
      seen.push(d);
      return { status: 429, retryAfter: '120' };
    });
    await redrive();
    const r = await row('throttled-1');
    expect(r.nrt - r.upd).toBeGreaterThanOrEqual(119);
    expect(r.nrt - r.upd).toBeLessThanOrEqual(121);
    expect(seen[0]).toMatchObject({
      eventId: 'throttled-1',
      bizType: 'coupon',
      bizId: 'biz-throttled-1',
      payload: { orderId: 42, note: '中文' },
      attempt: 1,
      idempotencyKey: 'throttled-1',
    });
  });

  it('a payload that is not JSON is a permanent failure, never sent', async () => {
    // The reference DDL has a JSON column, which MariaDB checks; an older table may hold anything.
    await schema.sql.query('ALTER TABLE async_task MODIFY payload LONGTEXT NULL');
    await insert('coupon', 'bad-payload', '{"orderId":');
    const { json } = await redrive();
    expect(json.failed).toBe(1);
    expect((await row('bad-payload')).lastError).toMatch(/^bad payload/);
    expect(handler.deliveries.has('bad-payload')).toBe(false);
  });

  it('runs command handlers: argv placeholders, payload on stdin, exit 0 / 75 / else / hang', async () => {
    for (const [id, mode] of [
      ['cmd-ok', 'ok'],
      ['cmd-temp', 'tempfail'],
      ['cmd-fail', 'fail'],
      ['cmd-deadlock', 'deadlock'],
      ['cmd-hang', 'hang'],
    ]) {
      await schema.sql.query(
        `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time) VALUES ('sms', ?, ?, '{}', 0, NOW() - INTERVAL 1 SECOND)`,
        [mode, id],
      );
    }
    const { json } = await redrive();
    expect(json).toMatchObject({ claimed: 5, succeeded: 1, retried: 3, failed: 1 });
    expect((await row('cmd-ok')).status).toBe(2);
    expect(await row('cmd-temp')).toMatchObject({ status: 0, attempts: 1 });
    expect((await row('cmd-temp')).lastError).toContain('exit 75');
    expect(await row('cmd-deadlock')).toMatchObject({ status: 0, attempts: 1 });
    expect(await row('cmd-fail')).toMatchObject({ status: 3, attempts: 1 });
    expect((await row('cmd-fail')).lastError).toContain('invalid coupon template');
    expect((await row('cmd-hang')).lastError).toMatch(/timeout after 3000 ms/);
  });

  it('leaves a biz type with no handler and no default alone, and reports it', async () => {
    await insert('refund', 'unknown-1');
    await insert('points', 'points-1');
    const { json, stderr } = await redrive();
    expect(json.unhandled).toEqual([{ bizType: 'refund', count: 1 }]);
    expect(stderr).toContain('refund');
    expect(json.claimed).toBe(1);
    expect((await row('unknown-1')).status).toBe(0);
    expect((await row('points-1')).status).toBe(2);
  });

  it('--dry-run counts what it would claim and writes nothing (table checksum unchanged)', async () => {
    await insert('coupon', 'dry-1');
    await insert('coupon', 'dry-2');
    await schema.sql.query(
      "INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, updated_at) VALUES ('coupon', 'b', 'dry-stuck', '{}', 1, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 1 HOUR)",
    );
    const checksum = async () => {
      const [rows] = await schema.sql.query('CHECKSUM TABLE async_task EXTENDED');
      return (rows as Array<{ Checksum: unknown }>)[0]?.Checksum;
    };
    const before = await checksum();
    const { code, json } = await redrive(['--dry-run']);
    expect(code).toBe(0);
    assertMatchesSchema('redrive', json);
    expect(json).toMatchObject({ dryRun: true, claimed: 3, recoveredStuck: 1, succeeded: 0 });
    expect(await checksum()).toBe(before);
    expect(handler.stats().total).toBe(0);
    // The check can fail: a real run changes the checksum.
    await redrive();
    expect(await checksum()).not.toBe(before);
  });

  it('refuses failed-job tables and Laravel’s jobs table with exit 3, pointing to compensate', async () => {
    for (const profile of ['laravel-failed-jobs', 'thinkphp-failed-jobs', 'laravel-jobs']) {
      await schema.sql.query('DROP TABLE IF EXISTS failed_jobs, jobs');
      await schema.sql.query(
        profile === 'laravel-jobs'
          ? 'CREATE TABLE jobs (id BIGINT PRIMARY KEY AUTO_INCREMENT, queue VARCHAR(255), payload LONGTEXT, attempts TINYINT UNSIGNED, reserved_at INT UNSIGNED NULL, available_at INT UNSIGNED, created_at INT UNSIGNED)'
          : profile === 'laravel-failed-jobs'
            ? 'CREATE TABLE failed_jobs (id BIGINT PRIMARY KEY AUTO_INCREMENT, uuid VARCHAR(255), connection TEXT, queue TEXT, payload LONGTEXT, exception LONGTEXT, failed_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)'
            : 'CREATE TABLE failed_jobs (id INT PRIMARY KEY AUTO_INCREMENT, connection TEXT, queue TEXT, payload LONGTEXT, exception LONGTEXT, fail_time DATETIME)',
      );
      const result = await runCli(['redrive', '--profile', profile], { cwd });
      expect(result.code, profile).toBe(3);
      expect(result.stderr).toMatch(profile === 'laravel-jobs' ? /Laravel's own worker/ : /compensate/);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('refuses a lease under a second and an unknown log format with exit 3', async () => {
    expect((await runCli(['redrive', '--lease', '500ms'], { cwd })).code).toBe(3);
    // A lease shorter than a handler's timeout (coupon: 5s) is allowed but warned about.
    const short = await runCli(['redrive', '--lease', '2s', '--dry-run'], { cwd });
    expect(short.code).toBe(0);
    expect(short.stderr).toMatch(/--lease 2s is shorter than the slowest handler's timeout \(5s\)/);
    expect((await runCli(['redrive', '--lease', '6s', '--dry-run'], { cwd })).stderr).not.toMatch(
      /shorter than/,
    );
    const bad = await runCli(['redrive', '--log-format', 'xml'], { cwd });
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain('--log-format');
  });

  it('without handlers in the config says how to add them (exit 3)', async () => {
    const bare = configDir(`db: ${schema.dsn}\n`);
    const result = await runCli(['redrive'], { cwd: bare });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/handlers:/);
    void readFileSync(join(bare, 'taskrecon.config.yaml'), 'utf8');
  });
});
