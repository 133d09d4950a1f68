import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The embedded engine: the same statements (window functions, epoch arithmetic) on SQLite.
let dsn: string;

interface ReportJson {
  status: string;
  metrics: Record<string, number | null>;
  byBizType: Array<Record<string, number | null> & { bizType: string }>;
}

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'taskrecon-report-sqlite-')), 'tasks.sqlite');
  dsn = `sqlite:${file}`;
  const init = await runCli(['init', '--db', dsn]);
  expect(init.code, init.stderr).toBe(0);
  const db = new Database(file);
  const insert = db.prepare(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, next_retry_time, last_error, created_at, updated_at)
     VALUES (?, ?, ?, ?, 0, datetime('now', ?), ?, datetime('now', ?), datetime('now', ?))`,
  );
  // coupon: 20 successes with latencies 1..20 s (p95 = 19), 2 failed; sms: 1 due 30 min overdue, 1 stuck; 1 old row outside the window.
  for (let i = 1; i <= 20; i++)
    insert.run('coupon', `c${i}`, `ec${i}`, 2, '+0 seconds', null, '-1800 seconds', `-${1800 - i} seconds`);
  insert.run('coupon', 'cf1', 'ecf1', 3, '+0 seconds', 'HTTP 500', '-1200 seconds', '-60 seconds');
  insert.run('coupon', 'cf2', 'ecf2', 3, '+0 seconds', 'HTTP 502', '-1200 seconds', '-30 seconds');
  insert.run('sms', 's-due', 'es-due', 0, '-1800 seconds', 'timeout', '-2400 seconds', '-1800 seconds');
  insert.run('sms', 's-stuck', 'es-stuck', 1, '+0 seconds', null, '-2400 seconds', '-1200 seconds');
  insert.run('sms', 's-old', 'es-old', 2, '+0 seconds', null, '-3 hours', '-3 hours');
  db.close();
});

describe('report on SQLite', () => {
  it('computes the window, p95 and as-of-now metrics with the same statements', async () => {
    const { code, json } = await runJson<ReportJson>(['report', '--db', dsn], {
      env: { TZ: 'Asia/Shanghai' },
    });
    assertMatchesSchema('report', json);
    expect(json.metrics).toMatchObject({
      created: 24,
      succeeded: 20,
      failed: 2,
      latencyAvgSeconds: 10.5,
      latencyP95Seconds: 19,
      due: 1,
      stuck: 1,
      failedOpen: 2,
    });
    expect(json.metrics.failureRate).toBeCloseTo(2 / 24, 10);
    expect(json.metrics.oldestDueSeconds).toBeGreaterThanOrEqual(1800);
    expect(json.metrics.oldestDueSeconds).toBeLessThan(1830);
    expect(json.byBizType.find((b) => b.bizType === 'sms')).toMatchObject({
      created: 2,
      succeeded: 0,
      latencyP95Seconds: null,
    });
    // 8.3% ≥ 5%: CRITICAL.
    expect(json.status).toBe('CRITICAL');
    expect(code).toBe(2);
  });
});
