import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { startCountingHandler, type CountingHandler } from '../fixtures/redrive/counting-handler.js';
import { configDir } from '../fixtures/redrive/seed.js';
import { connect } from '../../src/db/connect.js';
import { bindSource } from '../../src/db/bind-source.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { asyncTaskDdl } from '../../src/db/ddl.js';
import { RetryPolicies } from '../../src/core/backoff.js';
import { registryOf } from '../../src/dispatch/registry.js';
import { MarkOnlyDispatcher } from '../../src/dispatch/mark-only.js';
import type { Dispatcher } from '../../src/dispatch/types.js';
import { runRedrive, type RedriveOptions } from '../../src/ops/redrive/redrive.js';

interface RedriveJson {
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  recoveredStuck: number;
}

let schema: TestSchema;
let handler: CountingHandler;
let cwd: string;

beforeAll(async () => {
  schema = await createTestSchema('redrive_profiles');
  handler = await startCountingHandler({
    behaviour: (d) => (d.eventId?.startsWith('bad') ? { status: 502 } : undefined),
  });
  cwd = configDir(`db: ${schema.dsn}\nhandlers:\n  default: { type: http, url: "${handler.url}" }\n`);
  const init = await runCli(['init', '--profile', 'job-retries'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  await handler?.close();
  await schema?.drop();
});

describe('redrive on job_retries (the job_retries design: no success status, no updated_at, max_attempts per row)', () => {
  it('deletes a row whose retry succeeded, fails one at its own max_attempts, recovers an old retrying row', async () => {
    await schema.sql
      .query(`INSERT INTO job_retries (job_id, task_name, payload, attempts, max_attempts, next_retry_at, status) VALUES
      ('ok-1', 'SendSms', '{"to":"138"}', 1, 3, NOW() - INTERVAL 1 MINUTE, 'pending'),
      ('bad-1', 'SendSms', '{"to":"139"}', 0, 3, NOW() - INTERVAL 1 MINUTE, 'pending'),
      ('later', 'SendSms', '{}', 0, 3, NOW() + INTERVAL 1 HOUR, 'pending'),
      ('old-retrying', 'SendSms', '{}', 1, 3, NOW() - INTERVAL 1 HOUR, 'retrying'),
      ('new-retrying', 'SendSms', '{}', 1, 3, NOW() - INTERVAL 1 MINUTE, 'retrying')`);
    const flags = ['redrive', '--profile', 'job-retries', '--pause', '0ms', '--stuck-after', '10m'];
    const first = await runJson<RedriveJson>(flags, { cwd });
    expect(first.code, first.stderr).toBe(0);
    // ok-1 and bad-1 due; old-retrying recovered (its next_retry_at is older than stuck-after); new-retrying may still be running.
    expect(first.json).toMatchObject({ claimed: 3, recoveredStuck: 1, succeeded: 2, retried: 1 });
    const rows = async () => {
      const [r] = await schema.sql.query(
        'SELECT job_id, status, attempts, last_error FROM job_retries ORDER BY job_id',
      );
      return r as Array<{ job_id: string; status: string; attempts: number; last_error: string | null }>;
    };
    expect((await rows()).map((r) => r.job_id)).toEqual(['bad-1', 'later', 'new-retrying']);
    for (let i = 0; i < 2; i++) {
      await schema.sql.query(
        "UPDATE job_retries SET next_retry_at = NOW() - INTERVAL 1 SECOND WHERE job_id = 'bad-1'",
      );
      await runJson<RedriveJson>(flags, { cwd });
    }
    const bad = (await rows()).find((r) => r.job_id === 'bad-1');
    expect(bad).toMatchObject({ status: 'failed', attempts: 3 });
    expect(bad?.last_error).toMatch(/HTTP 502.*gave up after 3 attempts/);
    expect(handler.deliveries.get('bad-1')).toBe(3);
    expect(handler.byAttempt.get('old-retrying#3')).toBe(1);
  });
});

describe('redrive on the embedded SQLite sandbox, in process (as demo and drills call it)', () => {
  it('claims, retries by the injected policy, fails and succeeds, and a second pass finds nothing due', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'taskrecon-redrive-sqlite-')), 'tasks.sqlite');
    const db = await connect(`sqlite:${file}`, { create: true });
    try {
      for (const statement of asyncTaskDdl(db.dialect)) await db.execute(statement);
      for (let i = 0; i < 120; i++) {
        await db.execute(
          `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time) VALUES (?, ?, ?, '{}', 0, datetime('now', '-1 minute'))`,
          [i % 3 === 0 ? 'sms' : 'coupon', `b${i}`, `e${i}`],
        );
      }
      const source = await bindSource(db, asyncTask, 'sandbox');
      let calls = 0;
      const flaky: Dispatcher = {
        kind: 'test',
        async dispatch(task) {
          calls++;
          return task.bizId === 'b0'
            ? { outcome: 'permanent', error: 'HTTP 400' }
            : { outcome: 'retryable', error: 'HTTP 503', retryAfterMs: 1000 };
        },
      };
      const options: RedriveOptions = {
        batch: 25,
        pauseMs: 0,
        concurrency: 4,
        leaseSeconds: 60,
        stuckAfterMs: 600_000,
        dryRun: false,
        dispatchers: registryOf({ sms: flaky, default: new MarkOnlyDispatcher() }),
        policies: RetryPolicies.fromConfig({ sms: { policy: 'fixed', interval: '30s', jitter: 0 } }),
      };
      const result = await runRedrive(source, options);
      expect(result).toMatchObject({
        claimed: 120,
        succeeded: 80,
        retried: 39,
        failed: 1,
        lostRace: 0,
        skipLocked: false,
      });
      expect(calls).toBe(40);
      const waits = (
        await db.query<{ w: number }>(
          `SELECT DISTINCT CAST(strftime('%s', next_retry_time) AS INTEGER) - CAST(strftime('%s', updated_at) AS INTEGER) AS w FROM async_task WHERE status = 0`,
        )
      ).map((r) => Number(r.w));
      expect(waits.every((w) => w >= 29 && w <= 31)).toBe(true);
      const again = await runRedrive(source, options);
      expect(again.claimed).toBe(0);
    } finally {
      await db.close();
    }
  });
});
