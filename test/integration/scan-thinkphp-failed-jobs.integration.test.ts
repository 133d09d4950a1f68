import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runJson } from '../support/cli.js';
import { createFixtureTable } from '../support/fixtures.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { num, type ScanJson } from '../support/scan-json.js';
import { assertMatchesSchema } from '../support/schemas.js';

// think-queue: fail_time TIMESTAMP, payload {job, maxTries, timeout, data, attempts}.
let schema: TestSchema;
const args = () => ['scan', '--db', schema.dsn, '--profile', 'thinkphp-failed-jobs'];
const env = { TZ: 'Europe/London' };

beforeAll(async () => {
  schema = await createTestSchema('scan_thinkphp_failed', { timeZone: '-03:00' });
  await createFixtureTable(schema, 'thinkphp_failed_jobs');
});

// Seeded before each test, so the margins hold however long the previous test took.
beforeEach(async () => {
  await schema.sql.query('DELETE FROM failed_jobs');
  const rows: Array<[string, number, number, string, number]> = [
    ['app\\job\\SendCoupon', 3, 3, 'coupon', 7200],
    ['app\\job\\SendCoupon', 5, 5, 'coupon', 1860],
    ['app\\job\\SendSms', 3, 3, 'sms', 1740],
    ['app\\job\\AddPoints', 1, 3, 'points', 10],
  ];
  for (const [job, attempts, maxTries, queue, ago] of rows) {
    const payload = JSON.stringify({
      job,
      maxTries,
      timeout: 60,
      data: { order_id: `${queue}-${ago}` },
      attempts,
    });
    await schema.sql.query(
      `INSERT INTO failed_jobs (connection, queue, payload, exception, fail_time) VALUES ('redis', ?, ?, ?, NOW() - INTERVAL ? SECOND)`,
      [queue, payload, `think\\exception\\ErrorException: timeout after ${attempts} tries`, ago],
    );
  }
});

afterAll(async () => {
  await schema?.drop();
});

describe('scan on the thinkphp-failed-jobs profile', () => {
  it('reads the job class, attempts and maxTries from the payload, every row failed', async () => {
    const { code, json } = await runJson<ScanJson>(args(), { env });
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    expect(json.summary).toMatchObject({ total: 4, due: null, stuck: null });
    expect(json.failed.map((t) => [t.bizType, t.attempts, t.maxAttempts, t.queue])).toEqual([
      ['app\\job\\SendCoupon', 3, 3, 'coupon'],
      ['app\\job\\SendCoupon', 5, 5, 'coupon'],
      ['app\\job\\SendSms', 3, 3, 'sms'],
      ['app\\job\\AddPoints', 1, 3, 'points'],
    ]);
    expect(json.byBizType[0]).toMatchObject({ bizType: 'app\\job\\SendCoupon', total: 2 });
  });

  it('windows by fail_time across zones as SQL ground truth says', async () => {
    const { json } = await runJson<ScanJson>([...args(), '--since', '30m'], { env });
    const [truth] = (await schema.sql.query(
      `SELECT COUNT(*) AS n FROM failed_jobs WHERE fail_time >= NOW() - INTERVAL 30 MINUTE`,
    )) as unknown as [Array<{ n: number }>];
    expect(json.summary.total).toBe(num(truth[0]?.n));
    expect(json.failed.map((t) => t.bizType)).toEqual(['app\\job\\SendSms', 'app\\job\\AddPoints']);
  });
});
