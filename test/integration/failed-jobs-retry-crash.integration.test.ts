import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { BIN, runCli, runJson } from '../support/cli.js';
import { frameworkTableDdl } from '../support/framework-tables.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { dropPrefix, openTestRedis } from '../support/redis.js';

// Failed jobs re-pushed onto their queues (compensate --action retry, and sweep) survive SIGKILL at
// any point: 3,000 Laravel failed jobs (half on a Redis connection, half on the database
// connection) and 3,000 think-queue failed jobs (Redis), each run killed at random points 10 times
// and rerun until done. Afterwards every job is in its queue exactly once, no failed row is left,
// and each failed row has exactly one audit row. A re-push that is pushed and then killed before
// its transaction commits used to be pushed again by the rerun (a doubled job); the write-ahead
// intent makes the rerun delete and audit it instead.

const REDIS_DB = 11;
const JOBS = 3000;
const KILLS = 10;
/**
 * Each run is paced to RATE rows a second and killed within KILL_WINDOW_MS of its first push: a
 * killed run retries at most a batch plus RATE × window rows (290 here), so ten kills never run
 * out of work, on a fast machine as on a loaded one.
 */
const RATE = '800/s';
const KILL_WINDOW_MS = 300;
const RUN = randomBytes(4).toString('hex');
const prefix = `tr_fjcrash_${RUN}_`;
const redisUrl = `redis://127.0.0.1:6379/${REDIS_DB}`;
const laravelKey = `${prefix}queues:default`;
const thinkKey = `${prefix}{queues:default}`;

let redis: Redis;
let schema: TestSchema;
let cwd: string;

const q = async <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
  (await schema.sql.query(sql, params))[0] as T[];

function laravelPayload(uuid: string, n: number): string {
  return JSON.stringify({
    uuid,
    displayName: 'App\\Jobs\\IssueCoupon',
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    maxTries: 3,
    timeout: null,
    retryUntil: null,
    data: {
      commandName: 'App\\Jobs\\IssueCoupon',
      command: `O:20:"App\\Jobs\\IssueCoupon":1:{s:1:"n";i:${n};}`,
    },
    id: randomBytes(16).toString('hex'),
    attempts: 3,
  });
}

function thinkPayload(id: string, n: number): string {
  return JSON.stringify({
    job: 'app\\job\\SendSms',
    maxTries: null,
    timeout: null,
    data: { n },
    id,
    attempts: 3,
  });
}

/** 3,000 Laravel failed jobs (odd: Redis, even: database) and 3,000 think-queue ones; their identities. */
async function seed(): Promise<{ laravel: Set<string>; think: Set<string> }> {
  const laravel = new Set<string>();
  const think = new Set<string>();
  for (let start = 0; start < JOBS; start += 500) {
    const lv: unknown[] = [];
    const tv: unknown[] = [];
    for (let n = start; n < start + 500; n++) {
      const uuid = randomUUID();
      laravel.add(uuid);
      lv.push(
        uuid,
        n % 2 ? 'redis' : 'database',
        'default',
        laravelPayload(uuid, n),
        'Exception: crash-test partner down',
      );
      const id = randomBytes(12).toString('hex');
      think.add(id);
      tv.push('redis', 'default', thinkPayload(id, n), 'Exception: crash-test partner down');
    }
    await q(
      `INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) VALUES ${Array.from({ length: 500 }, () => '(?, ?, ?, ?, ?)').join(', ')}`,
      lv,
    );
    await q(
      `INSERT INTO think_failed_jobs (connection, queue, payload, exception) VALUES ${Array.from({ length: 500 }, () => '(?, ?, ?, ?)').join(', ')}`,
      tv,
    );
  }
  return { laravel, think };
}

/** How many times each identity sits in its queues: Redis lists and Laravel's jobs table. */
async function queued(): Promise<{ laravel: Map<string, number>; think: Map<string, number> }> {
  const laravel = new Map<string, number>();
  const think = new Map<string, number>();
  const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const p of await redis.lrange(laravelKey, 0, -1))
    count(laravel, (JSON.parse(p) as { uuid: string }).uuid);
  for (const r of await q<{ payload: string }>('SELECT payload FROM jobs'))
    count(laravel, (JSON.parse(r.payload) as { uuid: string }).uuid);
  for (const p of await redis.lrange(thinkKey, 0, -1)) count(think, (JSON.parse(p) as { id: string }).id);
  return { laravel, think };
}

const doubled = (m: Map<string, number>) => [...m].filter(([, n]) => n > 1).length;

/** Jobs pushed so far (Redis lists and the jobs table): the kill is armed once this grows. */
async function pushedCount(): Promise<number> {
  const [row] = await q<{ n: number }>('SELECT COUNT(*) AS n FROM jobs');
  return (await redis.llen(laravelKey)) + (await redis.llen(thinkKey)) + Number(row?.n);
}

/** Whether a push's marker is in Redis: a batch between its push and the removal after its commit. */
async function markerSeen(): Promise<boolean> {
  const [, keys] = await redis.scan('0', 'MATCH', 'taskrecon:intent:*', 'COUNT', 1000);
  return keys.length > 0;
}

/**
 * Runs taskrecon and SIGKILLs it at a random point within `windowMs` after its first push landed
 * (so start-up on a loaded machine does not eat the window), or, with `atMarker`, as soon as a
 * push's marker is seen after that (most often before the batch commits: the case a rerun must
 * not push again). Resolves with whether the kill hit.
 */
function runAndKill(
  args: string[],
  windowMs: number,
  atMarker = false,
): Promise<{ killed: boolean; stderr: string }> {
  return new Promise((resolve, reject) => {
    void pushedCount().then((before) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd,
        env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      let done = false;
      let armed = false;
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
      let timer: NodeJS.Timeout | undefined;
      void (async () => {
        while (!done && !armed) {
          if ((await pushedCount()) > before) {
            armed = true;
            timer = setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * windowMs));
            break;
          }
          await new Promise((r) => setTimeout(r, 10));
        }
        while (atMarker && !done) {
          if (await markerSeen()) {
            child.kill('SIGKILL');
            return;
          }
          await new Promise((r) => setTimeout(r, 2));
        }
      })();
      child.on('error', reject);
      child.on('close', (_code, signal) => {
        done = true;
        clearTimeout(guard);
        clearTimeout(timer);
        resolve({ killed: signal === 'SIGKILL' && armed, stderr });
      });
    }, reject);
  });
}

/** Open intents whose push landed (the marker lists the pushed rows): killed between push and commit. */
async function pushedUnsettled(): Promise<number> {
  let n = 0;
  for (const i of await q<{ id: number; run_id: string }>(
    "SELECT id, run_id FROM taskrecon_intent WHERE state = 'open'",
  ))
    if ((await redis.type(`taskrecon:intent:${i.run_id}:${i.id}`)) === 'list') n++;
  return n;
}

/** Kills `args` KILLS times mid-run (bounded), then runs it to its end; checks no job doubled meanwhile. */
async function killThenFinish(
  args: string[],
  windowMs: number,
): Promise<{ kills: number; betweenPushAndCommit: number }> {
  let kills = 0;
  let betweenPushAndCommit = 0;
  for (let attempt = 0; kills < KILLS && attempt < KILLS + 10; attempt++) {
    // Every other run is killed as soon as a push's marker shows, the others at random.
    const run = await runAndKill(args, windowMs, attempt % 2 === 1);
    if (run.killed) kills++;
    betweenPushAndCommit += await pushedUnsettled();
    const now = await queued();
    expect({ attempt, laravel: doubled(now.laravel), think: doubled(now.think) }).toEqual({
      attempt,
      laravel: 0,
      think: 0,
    });
  }
  console.log(
    `${args.slice(0, 3).join(' ')}: ${kills} kills, ${betweenPushAndCommit} between a push and its commit`,
  );
  const done = await runCli(args, { cwd });
  expect(done.code, done.stderr).toBe(0);
  return { kills, betweenPushAndCommit };
}

/** Every job in its queue exactly once, no failed row left, one audit row per failed row, no open intent. */
async function expectDone(ids: { laravel: Set<string>; think: Set<string> }, action: string): Promise<void> {
  const now = await queued();
  const once = (m: Map<string, number>, want: Set<string>) => ({
    missing: [...want].filter((id) => !m.has(id)).length,
    doubled: doubled(m),
    foreign: [...m.keys()].filter((id) => !want.has(id)).length,
  });
  expect({ laravel: once(now.laravel, ids.laravel), think: once(now.think, ids.think) }).toEqual({
    laravel: { missing: 0, doubled: 0, foreign: 0 },
    think: { missing: 0, doubled: 0, foreign: 0 },
  });
  const left = await q<{ n: number }>(
    'SELECT (SELECT COUNT(*) FROM failed_jobs) + (SELECT COUNT(*) FROM think_failed_jobs) AS n',
  );
  expect(Number(left[0]?.n)).toBe(0);
  const audit = await q<{ source: string; rows: number; ids: number; most: number }>(
    `SELECT source, COUNT(*) AS \`rows\`, COUNT(DISTINCT task_id) AS ids, MAX(n) AS most FROM
       (SELECT source, task_id, COUNT(*) AS n FROM taskrecon_audit WHERE action = ? GROUP BY source, task_id) per
     GROUP BY source ORDER BY source`,
    [action],
  );
  expect(audit.map((a) => [a.source, Number(a.ids), Number(a.most)])).toEqual([
    ['laravel', JOBS, 1],
    ['think', JOBS, 1],
  ]);
  const open = await q<{ n: number }>("SELECT COUNT(*) AS n FROM taskrecon_intent WHERE state = 'open'");
  expect(Number(open[0]?.n)).toBe(0);
}

beforeAll(async () => {
  redis = await openTestRedis(REDIS_DB);
  schema = await createTestSchema('fj_crash');
  for (const ddl of [
    ...frameworkTableDdl('mysql', 'laravel_jobs'),
    ...frameworkTableDdl('mysql', 'laravel_failed_jobs'),
    ...frameworkTableDdl('mysql', 'thinkphp_failed_jobs', 'think_failed_jobs'),
  ])
    await schema.sql.query(ddl);
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-fjcrash-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'sources:',
      '  laravel:',
      '    profile: laravel-failed-jobs',
      '    queue:',
      '      connections:',
      '        database: { driver: database, table: jobs }',
      `        redis: { driver: redis, url: "${redisUrl}", prefix: "${prefix}" }`,
      '  think:',
      '    profile: thinkphp-failed-jobs',
      '    table: think_failed_jobs',
      '    queue:',
      '      connections:',
      `        redis: { driver: redis, url: "${redisUrl}", prefix: "${prefix}" }`,
      'sweeps:',
      `  - { name: partner, match: { errorLike: 'crash-test' }, action: retry, rate: ${RATE} }`,
      '',
    ].join('\n'),
  );
  const init = await runCli(['init', '--audit-only', '--source', 'laravel'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

beforeEach(async () => {
  await dropPrefix(redis, prefix);
  for (const t of ['failed_jobs', 'think_failed_jobs', 'jobs', 'taskrecon_audit'])
    await q(`DELETE FROM ${t}`);
  await dropMarkers();
  await q('DELETE FROM taskrecon_intent');
});

/** The markers this file's runs left in the shared DB (only theirs: by the run ids of its intents). */
async function dropMarkers(): Promise<void> {
  const intents = await q<{ id: number; run_id: string }>('SELECT id, run_id FROM taskrecon_intent');
  for (const i of intents) await redis.del(`taskrecon:intent:${i.run_id}:${i.id}`);
}

afterAll(async () => {
  await dropPrefix(redis, prefix).catch(() => undefined);
  await dropMarkers().catch(() => undefined);
  redis?.disconnect();
  await schema?.drop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe('failed-job retries killed at random points', () => {
  it(`compensate --action retry: ${JOBS} Laravel and ${JOBS} think-queue failed jobs, ${KILLS} kills each, every job once`, async () => {
    const ids = await seed();
    const retry = (source: string) => [
      'compensate',
      '--source',
      source,
      '--action',
      'retry',
      '--yes',
      '--batch',
      '50',
      '--rate',
      RATE,
    ];
    const laravel = await killThenFinish(retry('laravel'), KILL_WINDOW_MS);
    const think = await killThenFinish(retry('think'), KILL_WINDOW_MS);
    expect([laravel.kills, think.kills]).toEqual([KILLS, KILLS]);
    // The case that doubled jobs before intents happened at least once: a kill after a push,
    // before its batch committed (its rerun settled it instead of pushing again).
    expect(laravel.betweenPushAndCommit + think.betweenPushAndCommit).toBeGreaterThan(0);
    await expectDone(ids, 'retry');
  });

  it(`sweep: the same jobs, ${KILLS} kills, every job once`, async () => {
    const ids = await seed();
    expect((await killThenFinish(['sweep', '--since', '1h'], KILL_WINDOW_MS)).kills).toBe(KILLS);
    await expectDone(ids, 'sweep-retry');
  });
});

interface RetryJson {
  applied: number;
  settledIntents?: Array<{ id: number; runId: string; state: string }>;
}

/** Resolves once `check` holds (polled), or fails after `ms`. */
async function until(check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('failed-job retries running at once', () => {
  it(`two retries of one failed-jobs table at once both exit 0: every job once, no batch settled by the other`, async () => {
    const ids = await seed();
    for (const source of ['laravel', 'think']) {
      const retry = ['compensate', '--source', source, '--action', 'retry', '--yes', '--batch', '50'];
      // The second starts while the first is pushing: it settles open re-pushes before its first
      // batch, when the first has one open most of the time (an intent per batch of 50).
      const before = await pushedCount();
      const first = runJson<RetryJson>([...retry, '--rate', '1500/s'], { cwd });
      await until(async () => (await pushedCount()) > before);
      const second = runJson<RetryJson>(retry, { cwd });
      const [a, b] = await Promise.all([first, second]);
      expect([a.code, b.code], `${a.stderr}\n${b.stderr}`).toEqual([0, 0]);
      expect([a.json.settledIntents ?? [], b.json.settledIntents ?? []]).toEqual([[], []]);
      expect(a.json.applied + b.json.applied).toBe(JOBS);
      expect(b.json.applied).toBeGreaterThan(0);
    }
    await expectDone(ids, 'retry');
  });

  it('leaves the open re-push of a run still connected to Redis, and fences it once that run is gone', async () => {
    // A run that has committed a batch's intent and not yet pushed: its Redis connection is named
    // after it. Another retry must leave that batch to it (before, it fenced it off and the first
    // run stopped with exit 3); once the connection is gone, the batch is settled as before.
    const failed = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const uuid = randomUUID();
        await q(
          'INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) VALUES (?, ?, ?, ?, ?)',
          [uuid, 'redis', 'default', laravelPayload(uuid, i), 'Exception: crash-test partner down'],
        );
      }
    };
    await failed(5);
    const runId = randomUUID();
    const live = new (await import('ioredis')).Redis(redisUrl, { connectionName: `taskrecon-run-${runId}` });
    await live.ping();
    const detail = { connection: 'redis', pushes: [{ id: '999999', queue: 'default', key: laravelKey }] };
    const [inserted] = await schema.sql.query(
      `INSERT INTO taskrecon_intent (run_id, kind, source, from_ref, to_ref, operator, host, action, jobs, detail, state, opened_epoch)
       VALUES (?, 'failed-job-retry', 'laravel', 'failed_jobs', ?, 'test', 'test', 'retry', '["999999"]', ?, 'open', UNIX_TIMESTAMP())`,
      [runId, `redis:${laravelKey}`, JSON.stringify(detail)],
    );
    const intentId = (inserted as { insertId: number }).insertId;
    const marker = `taskrecon:intent:${runId}:${intentId}`;
    const state = async () =>
      (await q<{ state: string }>('SELECT state FROM taskrecon_intent WHERE id = ?', [intentId]))[0]?.state;
    const retry = ['compensate', '--source', 'laravel', '--action', 'retry', '--yes'];
    try {
      const alive = await runJson<RetryJson>(retry, { cwd });
      expect(alive.code, alive.stderr).toBe(0);
      expect(alive.json.applied).toBe(5);
      expect(alive.json.settledIntents ?? []).toEqual([]);
      expect([await state(), await redis.exists(marker)]).toEqual(['open', 0]);
    } finally {
      live.disconnect();
    }
    await until(async () => !String(await redis.client('LIST')).includes(`taskrecon-run-${runId}`));
    await failed(3);
    const gone = await runJson<RetryJson>(retry, { cwd });
    expect(gone.code, gone.stderr).toBe(0);
    expect((gone.json.settledIntents ?? []).map((s) => [s.id, s.state])).toEqual([[intentId, 'not-landed']]);
    expect([await state(), await redis.get(marker)]).toEqual(['not-landed', 'fenced']);
  });
});
