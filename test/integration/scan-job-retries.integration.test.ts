import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createFixtureTable } from '../support/fixtures.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { num, type ScanJson } from '../support/scan-json.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The job-retries design's job_retries: ENUM status, a DATETIME next_retry_at written by an app at +08:00.
const APP_ZONE = '+08:00';
let schema: TestSchema;
let cwd: string;
const env = { TZ: 'America/New_York' };

beforeAll(async () => {
  schema = await createTestSchema('scan_job_retries', { timeZone: APP_ZONE });
  await createFixtureTable(schema, 'job_retries');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-job-retries-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    `db: ${schema.dsn}\nappTimeZone: "${APP_ZONE}"\nsources:\n  retries: { profile: job-retries }\n`,
  );
  await schema.sql.query(`
    INSERT INTO job_retries (job_id, task_name, payload, attempts, max_attempts, last_error, next_retry_at, status) VALUES
    ('j-due',      'send_sms',     '{"to":"138"}', 1, 3, 'timeout',       NOW() - INTERVAL 1 SECOND, 'pending'),
    ('j-due-old',  'send_sms',     '{"to":"139"}', 2, 3, 'HTTP 502',      NOW() - INTERVAL 3 HOUR,   'pending'),
    ('j-not-due',  'issue_coupon', '{"c":1}',      1, 3, 'HTTP 503',      NOW() + INTERVAL 2 MINUTE, 'pending'),
    ('j-no-time',  'issue_coupon', '{"c":2}',      0, 3, NULL,            NULL,                      'pending'),
    ('j-retrying', 'issue_coupon', 'plain text',   2, 3, 'conn reset',    NOW() - INTERVAL 1 HOUR,   'retrying'),
    ('j-failed',   'send_sms',     '{"to":"137"}', 3, 3, 'invalid phone', NOW() - INTERVAL 1 DAY,    'failed')`);
});

afterAll(async () => {
  await schema?.drop();
});

describe('scan on the job-retries profile', () => {
  it('counts due pending rows as SQL ground truth says, in the app zone, with stuck n/a', async () => {
    const { code, json } = await runJson<ScanJson>(['scan'], { cwd, env });
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    const [truth] = (await schema.sql.query(
      `SELECT COUNT(*) AS total, SUM(status = 'pending' AND next_retry_at <= NOW()) AS due,
              SUM(status = 'pending') AS pending, SUM(status = 'retrying') AS retrying, SUM(status = 'failed') AS failed
         FROM job_retries`,
    )) as unknown as [Array<Record<string, unknown>>];
    const t = truth[0] ?? {};
    expect(json.summary.total).toBe(num(t.total));
    expect(json.summary.due).toBe(num(t.due));
    expect(json.summary.byStatus).toMatchObject({
      pending: num(t.pending),
      processing: num(t.retrying),
      failed: num(t.failed),
    });
    expect(json.summary.stuck).toBeNull();
    expect(json.due.map((r) => r.eventId)).toEqual(['j-due-old', 'j-due']);
    expect(json.due[0]).toMatchObject({
      bizType: 'send_sms',
      attempts: 2,
      maxAttempts: 3,
      createdAt: null,
      updatedAt: null,
    });
    expect(json.failed.map((r) => r.eventId)).toEqual(['j-failed']);
    expect(json.summary.oldestDueSeconds).toBeGreaterThanOrEqual(3 * 3600);
    expect(json.summary.oldestDueSeconds).toBeLessThan(3 * 3600 + 60);
    expect(json.notes.join(' ')).toMatch(/stuck is n\/a/);
  });

  it('reads DATETIMEs in the server zone when appTimeZone is not set, so rows the +08:00 app made due up to 8h ago look not yet due', async () => {
    const { json } = await runJson<ScanJson>(['scan', '--db', schema.dsn, '--profile', 'job-retries'], {
      env,
    });
    expect(json.summary.due).toBe(0);
    expect(json.due).toEqual([]);
  });

  it('refuses --since on a table with no created or updated time, with exit 3', async () => {
    const result = await runCli(['scan', '--since', '1h'], { cwd, env });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('--since/--until need a created or updated time');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
