import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { createThinkQueueTables } from '../support/fixtures.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * The hourly sweep of think-queue's failed_jobs (the hourly sweep of a ThinkPHP shop), on every
 * engine: SMS retried at once (slowly), warehouse jobs only inside their window and outside the
 * maintenance blackout, schema errors held. appTimeZone is Asia/Shanghai (UTC+8, no DST) and the
 * seeding session writes its wall-clock times there; the database clock is placed inside and
 * outside each window by writing the windows relative to the database's now in that zone (several
 * of them run across midnight whatever the time of day).
 */
const ZONE = 'Asia/Shanghai';
const ZONE_OFFSET = 8 * 3600;
const REDIS_URL = 'redis://127.0.0.1:6379/14';
const SMS = 'app\\job\\SendPaidSmsJob';
const PICK = 'app\\job\\CreatePickTaskJob';

interface SweepJson {
  now: string;
  matched: number;
  unmatched: number;
  retried: number;
  deferred: number;
  held: number;
  secondFailures: number;
  alerted: number;
  results: Array<{
    id: number;
    rule: string;
    outcome: string;
    eligibleAt: string | null;
    identity: string;
    alerted?: boolean;
  }>;
}

let redis: Redis;
let hook: Server;
const hooks: string[] = [];

const hhmm = (minuteOfDay: number) => {
  const m = ((minuteOfDay % 1440) + 1440) % 1440;
  return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
};

function thinkPayload(job: string, data: object, extra: object = {}): string {
  return JSON.stringify({ job, maxTries: 3, timeout: 60, data, ...extra, attempts: 3 }).replace(/\//g, '\\/');
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    await redis.ping();
  } catch (error) {
    throw new Error(
      `Redis on 127.0.0.1:6379 is unreachable (start it: redis-server --daemonize yes): ${String(error)}`,
    );
  }
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      hooks.push(body);
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  redis?.disconnect();
  await new Promise((resolve) => hook?.close(resolve));
});

describe.each(TEST_ENGINES)('sweep over think-queue failed jobs on %s', (engine) => {
  let db: EngineDb;
  let cwd: string;
  const smsQueue = `sms_${randomBytes(4).toString('hex')}`;
  let nowEpoch = 0;
  let localSecond = 0;
  let hooksBefore = 0;
  const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);

  /** The absolute instant at which local minute `offset` from now's minute starts (the next one at or after now). */
  const opensAt = (offsetMinutes: number) => {
    const localMinute = Math.floor(localSecond / 60);
    const boundary = ((((localMinute + offsetMinutes) % 1440) + 1440) % 1440) * 60;
    const delta = (((boundary - localSecond) % 86_400) + 86_400) % 86_400;
    return new Date((nowEpoch + delta) * 1000).toISOString().replace('.000Z', 'Z');
  };

  async function fail(connection: string, queue: string, payload: string, error: string, agoSeconds = 60) {
    await db.run(
      `INSERT INTO failed_jobs (connection, queue, payload, exception, fail_time) VALUES (?, ?, ?, ?, ${db.at(-agoSeconds)})`,
      [connection, queue, payload, error],
    );
  }

  function writeConfig(rules: string[]): void {
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        `appTimeZone: ${ZONE}`,
        'sources:',
        '  failed:',
        '    profile: thinkphp-failed-jobs',
        '    queue:',
        '      connections:',
        '        database: { driver: database, table: jobs }',
        `        redis: { driver: redis, url: "${REDIS_URL}" }`,
        'report:',
        `  notify: [{ kind: generic, url: "http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook" }]`,
        'sweeps:',
        ...rules.map((r) => `  - ${r}`),
        '',
      ].join('\n'),
    );
  }

  const RULES = () => [
    `{ name: sms, match: { bizType: '${SMS}' }, action: retry, rate: 50/s, maxSweeps: 1 }`,
    `{ name: open, match: { bizType: '${PICK}', queue: open }, action: retry, window: "${hhmm(Math.floor(localSecond / 60) - 60)}-${hhmm(Math.floor(localSecond / 60) + 60)}", maxSweeps: 1 }`,
    // Across midnight, now outside: opens 60 minutes from now.
    `{ name: closed, match: { bizType: '${PICK}', queue: closed }, action: retry, window: "${hhmm(Math.floor(localSecond / 60) + 60)}-${hhmm(Math.floor(localSecond / 60) - 30)}" }`,
    // Across midnight, now inside.
    `{ name: late, match: { bizType: '${PICK}', queue: late }, action: retry, window: "${hhmm(Math.floor(localSecond / 60) - 60)}-${hhmm(Math.floor(localSecond / 60) - 120)}" }`,
    // Inside the window, but in the maintenance blackout until 30 minutes from now.
    `{ name: maint, match: { bizType: '${PICK}', queue: maint }, action: retry, window: "${hhmm(Math.floor(localSecond / 60) - 120)}-${hhmm(Math.floor(localSecond / 60) + 120)}", blackout: ["${hhmm(Math.floor(localSecond / 60) - 30)}-${hhmm(Math.floor(localSecond / 60) + 30)}"] }`,
    // Opened 20 minutes ago, closed at the previous sweep (an hour ago): that sweep deferred what
    // failed before it, so this one looks back and retries it.
    `{ name: reopened, match: { bizType: '${PICK}', queue: reopened }, action: retry, window: "${hhmm(Math.floor(localSecond / 60) - 20)}-${hhmm(Math.floor(localSecond / 60) + 60)}" }`,
    // Open at the previous sweep too: that sweep retried what had failed before it; an older row is
    // no business of this one.
    `{ name: wasopen, match: { bizType: '${PICK}', queue: wasopen }, action: retry, window: "${hhmm(Math.floor(localSecond / 60) - 120)}-${hhmm(Math.floor(localSecond / 60) + 60)}" }`,
    `{ name: schema, match: { errorLike: 'Unknown column' }, action: hold }`,
  ];

  beforeAll(async () => {
    db = await createEngineDb(engine, 'sweep_thinkphp', { timeZone: '+08:00' });
    await createThinkQueueTables(db);
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-sweep-tp-'));
    const [clock] = await rows<{ now: number }>(`SELECT ${db.epoch('now')} AS now`);
    nowEpoch = Number(clock?.now);
    localSecond = (nowEpoch + ZONE_OFFSET) % 86_400;
    writeConfig(RULES());
    expect(
      (await runCli(['init', '--audit-only', '--profile', 'thinkphp-failed-jobs', '--db', db.dsn], { cwd }))
        .code,
    ).toBe(0);
  });

  afterAll(async () => {
    await redis?.del(`{queues:${smsQueue}}`);
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  const SMS_PAYLOADS = [1, 2, 3].map((n) =>
    thinkPayload(SMS, { order: n, mobile: '138' }, { id: `sms${n}${randomBytes(6).toString('hex')}` }),
  );
  const PICK_OPEN = [thinkPayload(PICK, { order: 11 }), thinkPayload(PICK, { order: 12 })];

  it('seeds the failures of the last hour, and older ones', async () => {
    for (const p of SMS_PAYLOADS)
      await fail('redis', smsQueue, p, 'RuntimeException: sms channel rate limited');
    for (const p of PICK_OPEN) await fail('database', 'open', p, 'warehouse 503');
    await fail('database', 'closed', thinkPayload(PICK, { order: 21 }), 'warehouse 503');
    await fail('database', 'late', thinkPayload(PICK, { order: 31 }), 'warehouse 503');
    await fail('database', 'maint', thinkPayload(PICK, { order: 41 }), 'warehouse in maintenance');
    await fail(
      'database',
      'default',
      thinkPayload('app\\job\\RefreshDailyReportJob', { day: 1 }),
      "SQLSTATE[42S22]: Unknown column 'x'",
    );
    await fail('database', 'default', thinkPayload('app\\job\\MarkPaidCustomerJob', { c: 1 }), 'other');
    // Three hours ago: an earlier sweep's business.
    await fail(
      'redis',
      smsQueue,
      thinkPayload(SMS, { order: 99 }, { id: 'old-sms' }),
      'rate limited',
      3 * 3600,
    );
    await fail('database', 'reopened', thinkPayload(PICK, { order: 51 }), 'warehouse 503', 3 * 3600);
    await fail('database', 'wasopen', thinkPayload(PICK, { order: 61 }), 'warehouse 503', 3 * 3600);
  });

  it('--dry-run says what each rule would do and writes nothing', async () => {
    const { code, json } = await runJson<SweepJson>(['sweep', '--since', '1h', '--dry-run'], { cwd });
    expect(code).toBe(0);
    assertMatchesSchema('sweep', json);
    const by = (outcome: string) =>
      json.results
        .filter((r) => r.outcome === outcome)
        .map((r) => r.rule)
        .sort();
    expect(by('would-retry')).toEqual(['late', 'open', 'open', 'reopened', 'sms', 'sms', 'sms']);
    expect(by('deferred')).toEqual(['closed', 'maint']);
    expect(by('held')).toEqual(['schema']);
    // The older rows the previous sweep could handle are not looked at again.
    expect(json.results.filter((r) => r.rule === 'wasopen' || r.identity === 'old-sms')).toEqual([]);
    expect(json.unmatched).toBe(1);
    expect(json.results.find((r) => r.rule === 'closed')?.eligibleAt).toBe(opensAt(60));
    expect(json.results.find((r) => r.rule === 'maint')?.eligibleAt).toBe(opensAt(30));
    expect((await rows('SELECT id FROM failed_jobs')).length).toBe(13);
    expect(await rows('SELECT id FROM taskrecon_audit')).toEqual([]);
    expect(await redis.llen(`{queues:${smsQueue}}`)).toBe(0);
  });

  it('retries the eligible jobs into their queues in think-queue format, audited with the job identity', async () => {
    const { code, json } = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
    expect(code).toBe(0);
    assertMatchesSchema('sweep', json);
    expect([json.retried, json.deferred, json.held, json.secondFailures]).toEqual([7, 2, 1, 0]);
    const pushed = await redis.lrange(`{queues:${smsQueue}}`, 0, -1);
    expect(pushed.sort()).toEqual(SMS_PAYLOADS.map((p) => p.replace('"attempts":3', '"attempts":0')).sort());
    const jobs = await rows<{ queue: string; payload: string; attempts: number }>(
      'SELECT queue, payload, attempts FROM jobs ORDER BY id',
    );
    expect(jobs.map((j) => j.queue).sort()).toEqual(['late', 'open', 'open', 'reopened']);
    expect(jobs.every((j) => j.attempts === 0 && j.payload.includes('"attempts":0'))).toBe(true);
    const audit = await rows<{ action: string; event_id: string }>(
      'SELECT action, event_id FROM taskrecon_audit',
    );
    expect(audit.length).toBe(7);
    expect(audit.every((a) => a.action === 'sweep-retry')).toBe(true);
    expect(audit.map((a) => a.event_id)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^sms1/), expect.stringMatching(/^fp:/)]),
    );
    expect((await rows('SELECT id FROM failed_jobs')).length).toBe(6);
  });

  it('does nothing new when the same sweep runs again', async () => {
    const { json } = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
    expect([json.retried, json.deferred, json.held, json.secondFailures]).toEqual([0, 2, 1, 0]);
    expect(await redis.llen(`{queues:${smsQueue}}`)).toBe(3);
    expect((await rows('SELECT id FROM jobs')).length).toBe(4);
    expect((await rows('SELECT id FROM taskrecon_audit')).length).toBe(7);
  });

  it('reports a job that fails again after its sweep as a second failure, not retried, alerted once', async () => {
    // The worker ran the re-pushed jobs and two failed again: new rows, same identity (payload id; job + data).
    await fail(
      'redis',
      smsQueue,
      (SMS_PAYLOADS[0] as string).replace('"attempts":3', '"attempts":1'),
      'sms channel rate limited again',
      5,
    );
    await fail(
      'database',
      'open',
      (PICK_OPEN[0] as string).replace('"attempts":3', '"attempts":2'),
      'warehouse 503 again',
      5,
    );
    hooksBefore = hooks.length;
    const first = await runJson<SweepJson>(['sweep', '--since', '1h', '--notify'], { cwd });
    expect(first.code).toBe(1);
    assertMatchesSchema('sweep', first.json);
    const second = first.json.results.filter((r) => r.outcome === 'second-failure');
    expect(second.map((r) => r.rule).sort()).toEqual(['open', 'sms']);
    expect(second.every((r) => r.alerted === true)).toBe(true);
    expect(first.json.retried).toBe(0);
    expect(await redis.llen(`{queues:${smsQueue}}`)).toBe(3);
    expect(hooks.length).toBe(hooksBefore + 1);
    expect(hooks[hooksBefore]).toContain('SendPaidSmsJob');
    expect(hooks[hooksBefore]).toContain('CreatePickTaskJob');
    const again = await runJson<SweepJson>(['sweep', '--since', '1h', '--notify'], { cwd });
    expect(again.code).toBe(1);
    expect(again.json.secondFailures).toBe(2);
    expect(
      again.json.results.filter((r) => r.outcome === 'second-failure').every((r) => r.alerted === false),
    ).toBe(true);
    expect(hooks.length).toBe(hooksBefore + 1);
    expect((await rows("SELECT id FROM taskrecon_audit WHERE action = 'sweep-alert'")).length).toBe(2);
    expect((await rows("SELECT id FROM taskrecon_audit WHERE action = 'sweep-retry'")).length).toBe(7);
  });

  it('report counts second failures and deferrals; scan lists the second failures', async () => {
    const report = await runJson<{ sweep?: { secondFailures: number; deferred: number } }>(
      ['report', '--window', '1h'],
      { cwd },
    );
    assertMatchesSchema('report', report.json);
    expect(report.json.sweep).toEqual({ secondFailures: 2, deferred: 2 });
    const scan = await runJson<{ secondFailures?: Array<{ rule: string; bizType: string }> }>(
      ['scan', '--second-failures'],
      { cwd },
    );
    expect(scan.code).toBe(0);
    assertMatchesSchema('scan', scan.json);
    expect(scan.json.secondFailures?.map((r) => r.rule).sort()).toEqual(['open', 'sms']);
    const plain = await runJson<{ secondFailures?: unknown }>(['scan'], { cwd });
    expect(plain.json.secondFailures).toBeUndefined();
  });

  it('stops with exit 3 on bad rules, naming the rule and key, and writes nothing', async () => {
    const before = await rows('SELECT id FROM taskrecon_audit');
    const cases: Array<[string[], RegExp]> = [
      [
        [`{ name: sms, match: { bizType: '${SMS}' }, action: resend }`],
        /rule 'sms': action: 'resend' is not an action/,
      ],
      [
        [`{ name: wh, action: retry, window: "09:00-18:00", blackout: ["08:00-19:00"] }`],
        /rule 'wh': window: the blackouts 08:00-19:00 cover the whole window/,
      ],
      [
        [`{ name: wh, action: retry, window: "9am-6pm" }`],
        /rule 'wh': window: '9am-6pm' is not a daily range/,
      ],
    ];
    for (const [rules, message] of cases) {
      writeConfig(rules);
      const { code, stdout } = await runCli(['sweep', '--json'], { cwd });
      expect(code).toBe(3);
      expect((JSON.parse(stdout) as { error: { message: string } }).error.message).toMatch(message);
    }
    // A window without appTimeZone.
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        'sources: { failed: { profile: thinkphp-failed-jobs } }',
        'sweeps:',
        '  - { name: wh, action: retry, window: "09:00-18:00" }',
        '',
      ].join('\n'),
    );
    const noZone = await runCli(['sweep'], { cwd });
    expect(noZone.code).toBe(3);
    expect(noZone.stderr).toMatch(/rule 'wh': window: .*needs appTimeZone/);
    expect(await rows('SELECT id FROM taskrecon_audit')).toEqual(before);
    expect((await rows('SELECT id FROM failed_jobs')).length).toBe(8);
    writeConfig(RULES());
  });
});
