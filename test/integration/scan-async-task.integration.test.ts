import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The app writes DATETIMEs in +08:00 while the client runs in New York: scan must not care.
const APP_ZONE = '+08:00';
let schema: TestSchema;
let cwd: string;

interface ScanJson {
  summary: {
    total: number;
    byStatus: Record<string, number>;
    stuck: number;
    due: number;
    oldestDueSeconds: number | null;
  };
  stuck: Array<{ bizId: string }>;
  due: Array<{ bizId: string }>;
  failed: Array<{ bizId: string }>;
  byBizType: Array<{ bizType: string; total: number; due: number; stuck: number }>;
}

beforeAll(async () => {
  schema = await createTestSchema('scan_async', { timeZone: APP_ZONE });
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-scan-'));
  writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${schema.dsn}\nappTimeZone: "${APP_ZONE}"\n`);
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  // Rows just inside and just outside the stuck (10m) and due (now) cutoffs, with a margin for the test's own run time.
  await schema.sql.query(`
    INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at) VALUES
    ('coupon', 'due-1',        'e1', '{}', 0, 1, NOW() - INTERVAL 1 SECOND,  'timeout', NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 1 MINUTE),
    ('coupon', 'due-old',      'e2', '{}', 0, 3, NOW() - INTERVAL 2 HOUR,    'HTTP 503', NOW() - INTERVAL 3 HOUR, NOW() - INTERVAL 2 HOUR),
    ('coupon', 'not-due',      'e3', '{}', 0, 1, NOW() + INTERVAL 2 MINUTE,  NULL, NOW() - INTERVAL 1 HOUR, NOW()),
    ('sms',    'stuck',        'e4', '{}', 1, 0, NOW() - INTERVAL 1 HOUR,    NULL, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 630 SECOND),
    ('sms',    'in-flight',    'e5', '{}', 1, 0, NOW() - INTERVAL 1 DAY,     NULL, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 540 SECOND),
    ('sms',    'failed',       'e6', '{}', 3, 7, NOW(),                      'HTTP 500', NOW() - INTERVAL 1 HOUR, NOW()),
    ('points', 'done',         'e7', '{}', 2, 0, NOW(),                      NULL, NOW() - INTERVAL 1 HOUR, NOW()),
    ('points', 'compensated',  'e8', '{}', 4, 7, NOW(),                      NULL, NOW() - INTERVAL 1 HOUR, NOW())`);
});

afterAll(async () => {
  await schema?.drop();
});

describe('scan on the async-task profile', () => {
  it('counts statuses and lists due, stuck and failed rows as SQL ground truth says, across zones', async () => {
    const { code, json } = await runJson<ScanJson>(['scan'], { cwd, env: { TZ: 'America/New_York' } });
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    const [truth] = (await schema.sql.query(
      `SELECT SUM(status = 0 AND next_retry_time <= NOW()) AS due,
              SUM(status = 1 AND updated_at <= NOW() - INTERVAL 600 SECOND) AS stuck,
              COUNT(*) AS total
         FROM async_task`,
    )) as unknown as [Array<{ due: string; stuck: string; total: number }>];
    expect(json.summary.total).toBe(Number(truth[0]?.total));
    expect(json.summary.due).toBe(Number(truth[0]?.due));
    expect(json.summary.stuck).toBe(Number(truth[0]?.stuck));
    expect(json.summary.byStatus).toMatchObject({
      pending: 3,
      processing: 2,
      success: 1,
      failed: 1,
      compensated: 1,
    });
    expect(json.due.map((t) => t.bizId)).toEqual(['due-old', 'due-1']);
    expect(json.stuck.map((t) => t.bizId)).toEqual(['stuck']);
    expect(json.failed.map((t) => t.bizId)).toEqual(['failed']);
    expect(json.summary.oldestDueSeconds).toBeGreaterThanOrEqual(7200);
    expect(json.summary.oldestDueSeconds).toBeLessThan(7260);
  });

  it('treats a processing row touched within --stuck-after as in flight, however old its next_retry_time', async () => {
    const { json } = await runJson<ScanJson>(['scan', '--stuck-after', '8m'], { cwd });
    expect(json.stuck.map((t) => t.bizId).sort()).toEqual(['in-flight', 'stuck']);
    const narrow = await runJson<ScanJson>(['scan', '--stuck-after', '15m'], { cwd });
    expect(narrow.json.summary.stuck).toBe(0);
  });

  it('filters by biz type and streams every row as NDJSON with --limit 0', async () => {
    const { json } = await runJson<ScanJson>(['scan', '--biz-type', 'coupon'], { cwd });
    expect(json.summary.total).toBe(3);
    const ndjson = await runCli(['scan', '--limit', '0', '--format', 'ndjson'], { cwd });
    expect(ndjson.code).toBe(0);
    const lines = ndjson.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { list: string; bizId: string });
    expect(lines.map((l) => `${l.list}:${l.bizId}`)).toEqual([
      'stuck:stuck',
      'due:due-old',
      'due:due-1',
      'failed:failed',
    ]);
  });

  it('refuses bad flags with exit 3 and a message naming the flag', async () => {
    for (const args of [
      ['--limit', '-1'],
      ['--stuck-after', '5x'],
    ]) {
      const result = await runCli(['scan', ...args], { cwd });
      expect(result.code).toBe(3);
      expect(result.stderr).toContain(args[0]);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
