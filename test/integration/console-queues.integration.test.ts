import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { perJob } from '../support/audit-jobs.js';
import { runJson } from '../support/cli.js';
import { csrfOf, signIn, startConsoleCli, type ConsoleProcess } from '../support/console.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

/**
 * The queues page and the backlog history: a real Redis (DB 15, a key prefix of this file and
 * engine) and the snapshots table, on every engine.
 */

const REDIS_URL = 'redis://127.0.0.1:6379/15';
const RUN = randomBytes(3).toString('hex');
const OPERATOR = `dora-${RUN}`;
let redis: Redis;

/** Page markup without the layout's whitespace between tags. */
function squeeze(markup: string): string {
  return markup.replace(/\s+/g, ' ').replace(/> </g, '><');
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect().catch((error: Error) => {
    throw new Error(
      `Redis at ${REDIS_URL} is unreachable (${error.message}); start it with: redis-server --daemonize yes`,
    );
  });
});

afterAll(async () => {
  const keys = await redis?.keys(`tr_console_${RUN}_*`);
  if (keys?.length) await redis.del(...keys);
  redis?.disconnect();
});

describe.each(TEST_ENGINES)('console queues page on %s', (engine) => {
  const prefix = `tr_console_${RUN}_${engine}_`;
  let db: EngineDb;
  let cwd: string;
  let consoleProc: ConsoleProcess;
  let cookie: string;
  let sessionCsrf = '';

  beforeAll(async () => {
    db = await createEngineDb(engine, 'console_queues');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-console-queues-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${db.dsn}\n`);
    expect((await runJson(['init'], { cwd })).code).toBe(0);
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nbrokers:\n  jobs: { kind: redis, url: "${REDIS_URL}", framework: laravel, prefix: "${prefix}", queues: [default] }\n`,
    );
    for (let i = 0; i < 3; i++)
      await redis.rpush(
        `${prefix}queues:default`,
        JSON.stringify({ uuid: `u${i}`, displayName: 'App\\Jobs\\SendSms', attempts: 0 }),
      );
    const now = Math.floor(Date.now() / 1000);
    for (const [ago, depth] of [
      [7200, 9],
      [3600, 5],
      [600, 3],
    ] as const)
      await db.run(
        'INSERT INTO taskrecon_queue_snapshot (broker, queue, depth, ready, at_epoch) VALUES (?, ?, ?, ?, ?)',
        ['jobs', 'default', depth, depth, now - ago],
      );
    consoleProc = await startConsoleCli([], { cwd, env: { TASKRECON_OPERATOR: OPERATOR } });
    cookie = await signIn(consoleProc.url);
  });

  afterAll(async () => {
    await consoleProc?.stop();
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it("shows each queue's counts as queues reads them, and the backlog history from the snapshots", async () => {
    const body = squeeze(await (await fetch(`${consoleProc.origin}/queues`, { headers: { cookie } })).text());
    expect(body).toContain('<a href="/queues" aria-current="page">Queues</a>');
    const row = /<tr><td>default<\/td><td class="num">(\d+)<\/td>/.exec(body);
    expect(row?.[1]).toBe('3');
    expect(body).toContain('aria-label="jobs / default: 3 buckets"');
    const overview = await (await fetch(`${consoleProc.origin}/`, { headers: { cookie } })).text();
    expect(overview).toContain('Queue backlog');
  });

  it('takes no snapshot of its own: the console only reads', async () => {
    await fetch(`${consoleProc.origin}/queues`, { headers: { cookie } });
    const [row] = await db.rows<{ n: number }>('SELECT COUNT(*) AS n FROM taskrecon_queue_snapshot');
    expect(row?.n).toBe(3);
  });
  it('recovers overdue delayed jobs from the queues page: a dry-run preview first, a reason required, then moved and audited', async () => {
    const past = Math.floor(Date.now() / 1000) - 3600;
    const delayed = `${prefix}queues:default:delayed`;
    for (let i = 0; i < 2; i++)
      await redis.zadd(
        delayed,
        past,
        JSON.stringify({ uuid: `late${i}`, displayName: 'App\\Jobs\\SendSms', attempts: 0 }),
      );
    const queuesPage = await (await fetch(`${consoleProc.origin}/queues`, { headers: { cookie } })).text();
    expect(queuesPage).toContain('delayed-overdue');
    expect(queuesPage).toContain('Fix: ');
    expect(queuesPage).toContain('Recover…');
    const overview = await (await fetch(`${consoleProc.origin}/`, { headers: { cookie } })).text();
    expect(overview).toContain('Recover…');
    const csrf = csrfOf(queuesPage);
    sessionCsrf = csrf;
    const form = { kind: 'recover', broker: 'jobs', queue: 'default', _csrf: csrf };
    const send = (path: string, body: Record<string, string>) =>
      fetch(`${consoleProc.origin}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: consoleProc.origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body).toString(),
      });
    const preview = await send('/queues/preview', form);
    expect(preview.status).toBe(200);
    expect(squeeze(await preview.text())).toContain('<b id="queue-matched">2</b>');
    expect(await redis.zcard(delayed)).toBe(2);
    // Forged: another origin, or no CSRF token: refused, nothing moved.
    const forged = await fetch(`${consoleProc.origin}/queues/apply`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...form, reason: 'pwned' }).toString(),
    });
    expect(forged.status).toBe(403);
    const { _csrf: _dropped, ...withoutCsrf } = form;
    expect((await send('/queues/apply', { ...withoutCsrf, reason: 'pwned' })).status).toBe(403);
    expect(await redis.zcard(delayed)).toBe(2);
    const noReason = await send('/queues/apply', { ...form, reason: '' });
    expect(noReason.status).toBe(400);
    expect(await redis.zcard(delayed)).toBe(2);
    const applied = await send('/queues/apply', { ...form, reason: 'workers were down' });
    expect(applied.status).toBe(303);
    expect(await redis.zcard(delayed)).toBe(0);
    expect(await redis.llen(`${prefix}queues:default`)).toBe(5);
    const audit = perJob(
      await db.rows<{ action: string; operator: string; reason: string; source: string }>(
        "SELECT action, operator, reason, source, task_id, before_json FROM taskrecon_audit WHERE action = 'queue-recover'",
      ),
    );
    expect(audit).toHaveLength(2);
    for (const { action, operator, reason, source } of audit)
      expect({ action, operator, reason, source }).toEqual({
        action: 'queue-recover',
        operator: OPERATOR,
        reason: 'workers were down',
        source: 'jobs',
      });
    const auditPage = await (await fetch(`${consoleProc.origin}/audit`, { headers: { cookie } })).text();
    expect(auditPage).toContain('queue-recover');
  });
  it('moves a queue into another from the console as `queues move` does: same refusals, previewed, audited', async () => {
    // The session's CSRF token, from the Recover form of the test before.
    const csrf = sessionCsrf;
    const send = (body: Record<string, string>, path = '/queues/preview') =>
      fetch(`${consoleProc.origin}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: consoleProc.origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          kind: 'move',
          broker: 'jobs',
          queue: 'default',
          _csrf: csrf,
          ...body,
        }).toString(),
      });
    const same = await send({ to: 'default' });
    expect(same.status).toBe(400);
    expect(await same.text()).toContain('is the queue the jobs come from');
    const before = await redis.llen(`${prefix}queues:default`);
    const preview = await send({ to: 'spare' });
    expect(squeeze(await preview.text())).toContain(`<b id="queue-matched">${before}</b>`);
    expect(await redis.llen(`${prefix}queues:default`)).toBe(before);
    expect((await send({ to: 'spare', reason: 'drain default' }, '/queues/apply')).status).toBe(303);
    expect(await redis.llen(`${prefix}queues:default`)).toBe(0);
    expect(await redis.llen(`${prefix}queues:spare`)).toBe(before);
    const moves = await db.rows<Record<string, unknown>>(
      "SELECT task_id, before_json FROM taskrecon_audit WHERE action = 'queue-move' AND reason = 'drain default'",
    );
    expect(perJob(moves)).toHaveLength(before);
  });
  it('an unreachable broker does not hide the overview: the verdict names it', async () => {
    const down = join(cwd, 'down');
    mkdirSync(down);
    writeFileSync(
      join(down, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nbrokers:\n  gone: { kind: redis, url: "redis://127.0.0.1:1/0", framework: laravel, queues: [default] }\n`,
    );
    const other = await startConsoleCli([], { cwd: down });
    try {
      const otherCookie = await signIn(other.url);
      const res = await fetch(`${other.origin}/`, { headers: { cookie: otherCookie } });
      expect(res.status).toBe(200);
      const body = squeeze(await res.text());
      expect(body).toContain('<span id="verdict-status">WARNING</span>');
      expect(body).toContain('broker gone unreachable');
    } finally {
      expect(await other.stop()).toBe(0);
    }
  });
});
