import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { createEngineFixtureTable } from '../support/fixtures.js';
import { num, type ScanJson } from '../support/scan-json.js';
import { assertMatchesSchema } from '../support/schemas.js';

// Laravel's database queue: unix-int times, so neither the session zone nor the client's TZ may matter.
const env = { TZ: 'Asia/Tokyo' };

const payload = (job: string, uuid: string) =>
  JSON.stringify({
    uuid,
    displayName: `App\\Jobs\\${job}`,
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    maxTries: 3,
    timeout: null,
    data: { commandName: `App\\Jobs\\${job}`, command: 'O:16:"App\\Jobs\\SendSms":0:{}' },
  });

describe.each(TEST_ENGINES)('scan on the laravel-jobs profile, unix-int times (%s)', (engine) => {
  let db: EngineDb;
  const args = () => ['scan', '--db', db.dsn, '--profile', 'laravel-jobs'];

  beforeAll(async () => {
    db = await createEngineDb(engine, 'scan_laravel_jobs', engine === 'sqlite' ? {} : { timeZone: '-05:00' });
    await createEngineFixtureTable(db, 'laravel_jobs');
  });

  // Seeded before each test, so the margins hold however long the previous test took.
  beforeEach(async () => {
    await db.run('DELETE FROM jobs');
    // Rows just inside and just outside the due (available_at ≤ now) and stuck (reserved_at ≤ now − 90s) cutoffs,
    // with a margin of at least 30s for the CLI's own start-up.
    const rows: Array<[string, string, number | null, number, string]> = [
      ['due-now', 'SendSms', null, -1, 'sms'],
      ['due-old', 'SendSms', null, -7200, 'sms'],
      ['not-due', 'IssueCoupon', null, 120, 'default'],
      ['stuck', 'IssueCoupon', -120, -300, 'default'],
      ['in-flight', 'GrantPoints', -45, -300, 'default'],
    ];
    for (const [uuid, job, reservedAgo, availableIn, queue] of rows) {
      const now = db.epoch('now');
      await db.run(
        `INSERT INTO jobs (queue, payload, attempts, reserved_at, available_at, created_at)
       VALUES (?, ?, ?, ${reservedAgo === null ? 'NULL' : `${now} + ${reservedAgo}`}, ${now} + ${availableIn}, ${now} - 600)`,
        [queue, payload(job, uuid), reservedAgo === null ? 0 : 1],
      );
    }
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('counts due and stuck reservations as SQL ground truth says, lists them in index order', async () => {
    const { code, json } = await runJson<ScanJson>(args(), { env });
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    const now = db.epoch('now');
    const [t = {}] = await db.rows(
      `SELECT COUNT(*) AS total,
              ${db.countIf('reserved_at IS NULL')} AS pending,
              ${db.countIf(`reserved_at IS NULL AND available_at <= ${now}`)} AS due,
              ${db.countIf(`reserved_at IS NOT NULL AND reserved_at <= ${now} - 90`)} AS stuck
         FROM jobs`,
    );
    expect(json.summary.total).toBe(num(t.total));
    expect(json.summary.byStatus.pending).toBe(num(t.pending));
    expect(json.summary.due).toBe(num(t.due));
    expect(json.summary.stuck).toBe(num(t.stuck));
    expect(json.summary).toMatchObject({ total: 5, due: 2, stuck: 1 });
    expect(json.due.map((j) => j.eventId)).toEqual(['due-old', 'due-now']);
    expect(json.stuck.map((j) => j.eventId)).toEqual(['stuck']);
    expect(json.stuck[0]).toMatchObject({
      bizType: 'App\\Jobs\\IssueCoupon',
      status: 'processing',
      attempts: 1,
      queue: 'default',
    });
    expect(json.summary.oldestDueSeconds).toBeGreaterThanOrEqual(7200);
    expect(json.summary.oldestDueSeconds).toBeLessThan(7260);
    const sms = json.byBizType.find((b) => b.bizType === 'App\\Jobs\\SendSms');
    expect(sms).toMatchObject({ total: 2, due: 2 });
  });

  it("uses --stuck-after instead of Laravel's 90s retry_after", async () => {
    const wide = await runJson<ScanJson>([...args(), '--stuck-after', '30s'], { env });
    expect(wide.json.stuck.map((j) => j.eventId).sort()).toEqual(['in-flight', 'stuck']);
    const narrow = await runJson<ScanJson>([...args(), '--stuck-after', '10m'], { env });
    expect(narrow.json.summary.stuck).toBe(0);
  });

  it('filters by the job class and by created time', async () => {
    const { json } = await runJson<ScanJson>([...args(), '--biz-type', 'App\\Jobs\\SendSms'], { env });
    expect(json.summary.total).toBe(2);
    const none = await runJson<ScanJson>([...args(), '--since', '5m'], { env });
    expect(none.json.summary.total).toBe(0);
    const all = await runJson<ScanJson>([...args(), '--since', '15m'], { env });
    expect(all.json.summary.total).toBe(5);
  });

  it('streams due and stuck rows as NDJSON', async () => {
    const result = await runCli([...args(), '--limit', '0', '--format', 'ndjson'], { env });
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { list: string; eventId: string });
    expect(lines.map((l) => `${l.list}:${l.eventId}`)).toEqual(['stuck:stuck', 'due:due-old', 'due:due-now']);
  });
});
