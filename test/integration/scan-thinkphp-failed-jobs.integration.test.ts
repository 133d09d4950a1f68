import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { createEngineFixtureTable } from '../support/fixtures.js';
import { num, type ScanJson } from '../support/scan-json.js';
import { assertMatchesSchema } from '../support/schemas.js';

// think-queue: payload {job, maxTries, timeout, data, attempts}; fail_time a TIMESTAMP on MySQL
// (written by a session in -03:00), a wall-clock timestamp on PostgreSQL (the server's zone), UTC
// text on SQLite. The client runs in London: no zone may leak into the counts or the window.
const env = { TZ: 'Europe/London' };

describe.each(TEST_ENGINES)('scan on the thinkphp-failed-jobs profile (%s)', (engine) => {
  let db: EngineDb;
  const args = () => ['scan', '--db', db.dsn, '--profile', 'thinkphp-failed-jobs'];

  beforeAll(async () => {
    db = await createEngineDb(
      engine,
      'scan_thinkphp_failed',
      engine === 'mysql' ? { timeZone: '-03:00' } : {},
    );
    await createEngineFixtureTable(db, 'thinkphp_failed_jobs');
  });

  // Seeded before each test, so the margins hold however long the previous test took.
  beforeEach(async () => {
    await db.run('DELETE FROM failed_jobs');
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
      await db.run(
        `INSERT INTO failed_jobs (connection, queue, payload, exception, fail_time) VALUES ('redis', ?, ?, ?, ${db.at(-ago)})`,
        [queue, payload, `think\\exception\\ErrorException: timeout after ${attempts} tries`],
      );
    }
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('reads the job class, attempts and maxTries from the payload, every row failed', async () => {
    const { code, json } = await runJson<ScanJson>(args(), { env });
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    expect(json.summary).toMatchObject({ total: 4, due: null, stuck: null });
    // Attempts as the worker counted them: the payload's + 1 (it is logged before the last increment).
    expect(json.failed.map((t) => [t.bizType, t.attempts, t.maxAttempts, t.queue])).toEqual([
      ['app\\job\\SendCoupon', 4, 3, 'coupon'],
      ['app\\job\\SendCoupon', 6, 5, 'coupon'],
      ['app\\job\\SendSms', 4, 3, 'sms'],
      ['app\\job\\AddPoints', 2, 3, 'points'],
    ]);
    expect(json.byBizType[0]).toMatchObject({ bizType: 'app\\job\\SendCoupon', total: 2 });
  });

  it('windows by fail_time across zones as SQL ground truth says', async () => {
    const { json } = await runJson<ScanJson>([...args(), '--since', '30m'], { env });
    const [truth] = await db.rows<{ n: number }>(
      `SELECT COUNT(*) AS n FROM failed_jobs WHERE ${db.epoch('fail_time')} >= ${db.epoch('now')} - 1800`,
    );
    expect(truth?.n).toBe(2);
    expect(json.summary.total).toBe(num(truth?.n));
    expect(json.failed.map((t) => t.bizType)).toEqual(['app\\job\\SendSms', 'app\\job\\AddPoints']);
  });
});
