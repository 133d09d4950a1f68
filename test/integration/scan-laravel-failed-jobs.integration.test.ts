import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { createEngineFixtureTable } from '../support/fixtures.js';
import { num, type ScanJson } from '../support/scan-json.js';
import { assertMatchesSchema } from '../support/schemas.js';

// failed_at is a TIMESTAMP written by a +08:00 session on MySQL, a wall-clock timestamp in the
// server's zone on PostgreSQL, UTC text on SQLite; the client runs in New York.
const env = { TZ: 'America/New_York' };

/** The job class from payload text that may not be JSON, in each engine's SQL: the ground truth. */
const displayName: Record<EngineDb['engine'], string> = {
  mysql: `CASE WHEN JSON_VALID(payload) THEN JSON_UNQUOTE(JSON_EXTRACT(payload, '$.displayName')) END`,
  sqlite: `CASE WHEN json_valid(payload) THEN json_extract(payload, '$.displayName') END`,
  postgres: `CASE WHEN payload LIKE '{%' THEN payload::jsonb ->> 'displayName' END`,
};

const payload = (job: string) =>
  JSON.stringify({
    uuid: 'ignored',
    displayName: `App\\Jobs\\${job}`,
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    maxTries: 3,
    data: { commandName: `App\\Jobs\\${job}`, command: 'O:8:"stdClass":0:{}' },
  });

describe.each(TEST_ENGINES)('scan on the laravel-failed-jobs profile (%s)', (engine) => {
  let db: EngineDb;
  const args = () => ['scan', '--db', db.dsn, '--profile', 'laravel-failed-jobs'];

  beforeAll(async () => {
    db = await createEngineDb(
      engine,
      'scan_laravel_failed',
      engine === 'mysql' ? { timeZone: '+08:00' } : {},
    );
    await createEngineFixtureTable(db, 'laravel_failed_jobs');
  });

  // Seeded before each test, so the margins hold however long the previous test took.
  beforeEach(async () => {
    await db.run('DELETE FROM failed_jobs');
    // Just inside and just outside a one-hour --since window, and a payload that is not JSON.
    const rows: Array<[string, string, string, number]> = [
      ['f-2h', payload('SendSms'), 'sms', 7200],
      ['f-61m', payload('SendSms'), 'sms', 3660],
      ['f-59m', payload('IssueCoupon'), 'default', 3540],
      ['f-1m', payload('IssueCoupon'), 'default', 60],
      ['f-garbled', 'a:2:{i:0;s:3:"not";} json', 'default', 30],
    ];
    for (const [uuid, body, queue, ago] of rows) {
      await db.run(
        `INSERT INTO failed_jobs (uuid, connection, queue, payload, exception, failed_at)
       VALUES (?, 'database', ?, ?, ?, ${db.at(-ago)})`,
        [
          uuid,
          queue,
          body,
          `Illuminate\\Queue\\MaxAttemptsExceededException: ${uuid} has been attempted too many times.\n#0 {main}`,
        ],
      );
    }
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('lists every row as failed, with the job class as biz type and due/stuck n/a', async () => {
    const { code, json } = await runJson<ScanJson>(args(), { env });
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    expect(json.summary).toMatchObject({ total: 5, due: null, stuck: null });
    expect(json.summary.byStatus.failed).toBe(5);
    expect(json.failed.map((t) => t.eventId)).toEqual(['f-2h', 'f-61m', 'f-59m', 'f-1m', 'f-garbled']);
    expect(json.failed[0]).toMatchObject({ bizType: 'App\\Jobs\\SendSms', queue: 'sms', status: 'failed' });
    expect(json.failed[4]?.bizType).toBeNull();
    expect(json.notes.join(' ')).toMatch(/due is n\/a/);
    const truth = await db.rows<{ bizType: string | null; n: number }>(
      `SELECT ${displayName[engine]} AS "bizType", COUNT(*) AS n FROM failed_jobs GROUP BY 1`,
    );
    expect(truth).toHaveLength(3);
    for (const row of truth) {
      expect(json.byBizType.find((b) => b.bizType === row.bizType)?.total).toBe(num(row.n));
    }
  });

  it('windows by failed_at with --since, as SQL ground truth says, across zones', async () => {
    const { json } = await runJson<ScanJson>([...args(), '--since', '1h'], { env });
    const [truth] = await db.rows<{ n: number }>(
      `SELECT COUNT(*) AS n FROM failed_jobs WHERE ${db.epoch('failed_at')} >= ${db.epoch('now')} - 3600`,
    );
    expect(json.summary.total).toBe(num(truth?.n));
    expect(json.failed.map((t) => t.eventId)).toEqual(['f-59m', 'f-1m', 'f-garbled']);
    const iso = await runJson<ScanJson>(
      [...args(), '--until', new Date(Date.now() - 3600_000).toISOString()],
      { env },
    );
    expect(iso.json.failed.map((t) => t.eventId)).toEqual(['f-2h', 'f-61m']);
  });

  it('filters by job class and shows a non-JSON payload row safely in the table view', async () => {
    const { json } = await runJson<ScanJson>([...args(), '--biz-type', 'App\\Jobs\\SendSms'], { env });
    expect(json.failed.map((t) => t.eventId)).toEqual(['f-2h', 'f-61m']);
    const table = await runCli(args(), { env });
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('f-garbled');
    expect(table.stdout).toContain('MaxAttemptsExceededException');
  });
});
