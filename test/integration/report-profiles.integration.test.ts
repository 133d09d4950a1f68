import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { laravelTablesDdl, thinkphpFailedJobsDdl } from '../support/framework-tables.js';
import { assertMatchesSchema } from '../support/schemas.js';

// Profiles that lack timestamps or statuses: what they cannot compute is null with a note, never 0.
const NULL_WINDOW = {
  created: null,
  succeeded: null,
  failureRate: null,
  latencyAvgSeconds: null,
  latencyP95Seconds: null,
};

interface ReportJson {
  status: string;
  metrics: Record<string, number | null>;
  byBizType: Array<
    Record<string, unknown> & {
      bizType: string | null;
      sample: { eventId: string | null; error: string } | null;
    }
  >;
  byQueue?: Array<Record<string, unknown>>;
  notes: string[];
}

describe.each(TEST_ENGINES)('report on profiles without the async-task shape (%s)', (engine) => {
  let db: EngineDb;

  const run = async (args: string[]) => {
    const result = await runJson<ReportJson>(['report', '--db', db.dsn, ...args], {
      env: { TZ: 'America/New_York', TASKRECON_APP_TIME_ZONE: '+08:00' },
    });
    assertMatchesSchema('report', result.json);
    return result;
  };
  const one = async (sql: string): Promise<number | null> => {
    const [row] = await db.rows(sql);
    const value = Object.values(row ?? {})[0];
    return value === null || value === undefined ? null : Number(value);
  };

  beforeAll(async () => {
    db = await createEngineDb(engine, 'report_profiles', { timeZone: '+08:00' });
    for (const profile of ['async-task', 'job-retries']) {
      const init = await runCli(['init', '--db', db.dsn, '--profile', profile]);
      expect(init.code, init.stderr).toBe(0);
    }
    // The framework-owned tables (init does not create them), and think-queue's beside Laravel's.
    for (const ddl of [...laravelTablesDdl(engine), ...thinkphpFailedJobsDdl(engine, 'tp_failed_jobs')])
      await db.run(ddl);
    await db.run(`
      INSERT INTO job_retries (job_id, task_name, attempts, max_attempts, last_error, next_retry_at, status) VALUES
        ('j1', 'SendSms', 1, 3, 'timeout', ${db.at(-1200)}, 'pending'),
        ('j2', 'SendSms', 1, 3, NULL, ${db.at(300)}, 'pending'),
        ('j3', 'SendSms', 3, 3, 'gateway 502', ${db.at(0)}, 'failed'),
        ('j4', 'SyncStock', 1, 3, NULL, ${db.at(0)}, 'retrying')`);
    const laravel = (job: string, uuid?: string) =>
      JSON.stringify({ displayName: `App\\Jobs\\${job}`, uuid });
    const now = db.epoch('now');
    await db.run(
      `INSERT INTO jobs (queue, payload, attempts, reserved_at, available_at, created_at) VALUES
        ('default', ?, 0, NULL, ${now} - 300, ${now} - 300),
        ('default', ?, 0, NULL, ${now} + 600, ${now} - 60),
        ('default', ?, 1, ${now} - 600, ${now} - 700, ${now} - 700),
        ('high', ?, 1, ${now} - 30, ${now} - 40, ${now} - 40)`,
      [laravel('SendSms', 'u1'), laravel('SendSms', 'u2'), laravel('SendSms', 'u3'), laravel('Refund', 'u4')],
    );
    await db.run(
      `INSERT INTO failed_jobs (uuid, connection, queue, payload, exception, failed_at) VALUES
        ('f1', 'database', 'default', ?, ?, ${db.at(-1200)}),
        ('f2', 'database', 'default', ?, 'RuntimeException: gateway 503', ${db.at(-600)}),
        ('f3', 'database', 'default', ?, 'InvalidArgumentException', ${db.at(-10_800)})`,
      [
        laravel('SendSms'),
        'RuntimeException: gateway 502\n#0 /app/Jobs/SendSms.php(31)',
        laravel('SendSms'),
        laravel('Refund'),
      ],
    );
    await db.run(
      `INSERT INTO tp_failed_jobs (connection, queue, payload, exception, fail_time) VALUES ('redis', 'orders', ?, 'PDOException: deadlock', ${db.at(-300)})`,
      [
        JSON.stringify({
          job: 'app\\job\\OrderPaid',
          maxTries: 3,
          timeout: 60,
          data: { id: 7 },
          attempts: 3,
        }),
      ],
    );
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('job-retries: no created/updated columns, so window metrics and stuck are null with a reason; due and failed open are counted', async () => {
    const { code, json } = await run(['--profile', 'job-retries']);
    expect(json.metrics).toMatchObject({ ...NULL_WINDOW, failed: null, stuck: null });
    expect(json.metrics.due).toBe(
      await one(`SELECT COUNT(*) FROM job_retries WHERE status = 'pending' AND next_retry_at <= ${db.at(0)}`),
    );
    expect(json.metrics.failedOpen).toBe(
      await one(`SELECT COUNT(*) FROM job_retries WHERE status = 'failed'`),
    );
    expect(json.metrics.oldestDueSeconds).toBeGreaterThanOrEqual(1200);
    expect(json.metrics.oldestDueSeconds).toBeLessThan(1230);
    expect(json.notes.join('\n')).toMatch(
      /no created_at column: created, succeeded, failed, failure rate and latency are n\/a/,
    );
    expect(json.notes.join('\n')).toMatch(/no updated_at column: stuck is n\/a/);
    expect(json.byBizType.find((b) => b.bizType === 'SendSms')?.sample).toMatchObject({
      eventId: 'j3',
      error: 'gateway 502',
    });
    // Oldest due 20 min ≥ 10 min: WARNING even though most metrics are n/a.
    expect(code).toBe(1);
  });

  it('laravel-jobs: backlog, due, reservations and stale reservations per queue, oldest job age; finished-job metrics are null', async () => {
    const { json } = await run(['--profile', 'laravel-jobs']);
    expect(json.metrics).toMatchObject({ ...NULL_WINDOW, failed: null, failedOpen: null });
    expect(json.metrics.due).toBe(
      await one(`SELECT COUNT(*) FROM jobs WHERE reserved_at IS NULL AND available_at <= ${db.epoch('now')}`),
    );
    // retry_after defaults to 90 s: u3 reserved 10 min ago is stale, u4 reserved 30 s ago is running.
    expect(json.metrics.stuck).toBe(
      await one(`SELECT COUNT(*) FROM jobs WHERE reserved_at <= ${db.epoch('now')} - 90`),
    );
    expect(json.metrics.stuck).toBe(1);
    const byQueue = Object.fromEntries((json.byQueue ?? []).map((q) => [q.queue, q]));
    expect(byQueue.default).toMatchObject({ backlog: 2, due: 1, reserved: 1, staleReservations: 1 });
    expect(byQueue.high).toMatchObject({
      backlog: 0,
      due: 0,
      reserved: 1,
      staleReservations: 0,
      oldestJobSeconds: null,
    });
    expect(byQueue.default?.oldestJobSeconds).toBeGreaterThanOrEqual(300);
    expect(byQueue.default?.oldestJobSeconds).toBeLessThan(330);
    expect(json.notes.join('\n')).toMatch(/deletes jobs when they finish/);
    const sms = json.byBizType.find((b) => b.bizType === 'App\\Jobs\\SendSms');
    expect(sms).toMatchObject({ due: 1, stuck: 1 });
  });

  it('laravel-jobs: a longer retry_after (--stuck-after) makes the old reservation in flight', async () => {
    const { json } = await run(['--profile', 'laravel-jobs', '--stuck-after', '15m']);
    expect(json.metrics.stuck).toBe(0);
    expect(json.byQueue?.find((q) => q.queue === 'default')).toMatchObject({ staleReservations: 0 });
  });

  it('laravel-failed-jobs: failures in the window by job class (the ThinkPHP failed-job sweep), all rows awaiting action, a sample exception', async () => {
    const { json } = await run(['--profile', 'laravel-failed-jobs']);
    expect(json.metrics).toMatchObject({ ...NULL_WINDOW, stuck: null, due: null });
    expect(json.metrics.failed).toBe(
      await one(`SELECT COUNT(*) FROM failed_jobs WHERE failed_at >= ${db.at(-3600)}`),
    );
    expect(json.metrics.failedOpen).toBe(await one(`SELECT COUNT(*) FROM failed_jobs`));
    const sms = json.byBizType.find((b) => b.bizType === 'App\\Jobs\\SendSms');
    expect(sms).toMatchObject({ failed: 2, failedOpen: 2, sample: { eventId: 'f2' } });
    expect(json.byBizType.find((b) => b.bizType === 'App\\Jobs\\Refund')).toMatchObject({
      failed: 0,
      failedOpen: 1,
    });
    expect(json.notes.join('\n')).toMatch(/holds only failed jobs/);
  });

  it('thinkphp-failed-jobs: the job class from the payload, fail_time as the failure time', async () => {
    const { json } = await run([
      '--profile',
      'thinkphp-failed-jobs',
      '--table',
      'tp_failed_jobs',
      '--window',
      '2m',
    ]);
    expect(json.metrics).toMatchObject({ failed: 0, failedOpen: 1, created: null, failureRate: null });
    const wide = await run([
      '--profile',
      'thinkphp-failed-jobs',
      '--table',
      'tp_failed_jobs',
      '--window',
      '10m',
    ]);
    expect(wide.json.byBizType).toEqual([
      expect.objectContaining({ bizType: 'app\\job\\OrderPaid', failed: 1, failedOpen: 1 }),
    ]);
    expect(wide.json.byBizType[0]?.sample?.error).toBe('PDOException: deadlock');
  });

  it('a source without a biz type (columns: { bizType: null }): report and scan count one group whose biz type is null', async () => {
    await db.run(`INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error, created_at, updated_at) VALUES
      ('coupon', 'n1', 'en1', 2, 0, NULL, ${db.at(-600)}, ${db.at(-590)}),
      ('sms', 'n2', 'en2', 3, 7, 'HTTP 500', ${db.at(-600)}, ${db.at(-300)})`);
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-no-biz-type-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nappTimeZone: "+08:00"\nsources:\n  plain: { profile: async-task, columns: { bizType: null } }\n`,
    );
    const report = await runJson<ReportJson>(['report'], { cwd });
    expect(report.code, JSON.stringify(report.json)).not.toBe(3);
    assertMatchesSchema('report', report.json);
    expect(report.json.metrics).toMatchObject({ created: 2, succeeded: 1, failed: 1, failedOpen: 1 });
    expect(report.json.byBizType).toEqual([
      expect.objectContaining({ bizType: null, created: 2, succeeded: 1, failed: 1, failedOpen: 1 }),
    ]);
    const scan = await runJson<{
      summary: { byStatus: Record<string, number> };
      byBizType: Array<{ bizType: string | null }>;
    }>(['scan'], { cwd });
    expect(scan.code, JSON.stringify(scan.json)).not.toBe(3);
    assertMatchesSchema('scan', scan.json);
    expect(scan.json.summary.byStatus).toMatchObject({ success: 1, failed: 1 });
    expect(scan.json.byBizType.map((b) => b.bizType)).toEqual([null]);
  });
});
