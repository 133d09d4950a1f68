import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { BIN, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { openTestRedis, laravelBrokerYaml } from '../support/redis.js';

// Crash safety of `queues move` and `queues recover`: 10k jobs in Laravel's key layout, the
// processes killed with SIGKILL at random points 20 times in all; after each kill every job is in
// exactly one place (counted by payload id across every list and sorted set of the prefix). The
// classic mover (ZRANGEBYSCORE, then ZREM and LPUSH per member) killed the same way loses or
// doubles jobs, so the count can fail.

const REDIS_DB = 13;
const JOBS = 10_000;
const KILLS_MOVE = 14;
const KILLS_RECOVER = 6;
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const prefix = `tr_crash_${randomBytes(4).toString('hex')}_`;
const url = `redis://127.0.0.1:6379/${REDIS_DB}`;

let redis: Redis;
let cwd: string;
let schema: TestSchema;

/** A Laravel 8 payload as RedisQueue::createPayload writes it (the job's serialized command inside). */
function laravelPayload(id: string, attempts: number): string {
  const command = `O:20:"App\\Jobs\\IssueCoupon":3:{s:6:"userId";i:${Math.floor(Math.random() * 1e6)};s:6:"coupon";s:8:"NEWYEAR5";s:5:"queue";N;}`;
  return JSON.stringify({
    uuid: randomUUID(),
    displayName: 'App\\Jobs\\IssueCoupon',
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    maxTries: 3,
    maxExceptions: null,
    failOnTimeout: false,
    backoff: null,
    timeout: null,
    retryUntil: null,
    data: { commandName: 'App\\Jobs\\IssueCoupon', command },
    id,
    attempts,
  });
}

const key = (queue: string, suffix = '') => `${prefix}queues:${queue}${suffix}`;

/**
 * Seeds the queue: a third ready, a third delayed and overdue, a third reserved by a dead worker
 * (expired). Returns every payload id.
 */
async function seed(queue: string): Promise<Set<string>> {
  const ids = new Set<string>();
  const now = Math.floor(Date.now() / 1000);
  for (let start = 0; start < JOBS; start += 1000) {
    const pipe = redis.pipeline();
    for (let i = start; i < Math.min(JOBS, start + 1000); i++) {
      const id = randomBytes(16).toString('hex');
      ids.add(id);
      if (i % 3 === 0) pipe.rpush(key(queue), laravelPayload(id, 0));
      else if (i % 3 === 1) pipe.zadd(key(queue, ':delayed'), now - 60 - (i % 500), laravelPayload(id, 0));
      else pipe.zadd(key(queue, ':reserved'), now - 30 - (i % 500), laravelPayload(id, 1));
    }
    await pipe.exec();
  }
  return ids;
}

interface Census {
  lost: string[];
  doubled: string[];
  foreign: number;
  byKey: Record<string, number>;
}

/** Where every job is: counts by payload id over every list and sorted set of the prefix. */
async function census(expected: Set<string>): Promise<Census> {
  const seen = new Map<string, number>();
  const byKey: Record<string, number> = {};
  let foreign = 0;
  let cursor = '0';
  const keys: string[] = [];
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  for (const k of keys) {
    if (k.endsWith(':notify')) continue;
    const type = await redis.type(k);
    const members =
      type === 'list' ? await redis.lrange(k, 0, -1) : type === 'zset' ? await redis.zrange(k, 0, -1) : [];
    byKey[k.slice(prefix.length)] = members.length;
    for (const member of members) {
      let id: unknown;
      try {
        id = (JSON.parse(member) as { id?: unknown }).id;
      } catch {
        id = undefined;
      }
      if (typeof id !== 'string' || !expected.has(id)) {
        foreign++;
        continue;
      }
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
  }
  return {
    lost: [...expected].filter((id) => !seen.has(id)),
    doubled: [...seen].filter(([, n]) => n > 1).map(([id]) => id),
    foreign,
    byKey,
  };
}

async function dropKeys(): Promise<void> {
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (batch.length > 0) await redis.del(...batch);
  } while (cursor !== '0');
}

interface Killed {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** The kill was armed: the process had started moving jobs when its timer began. */
  armed: boolean;
}

/** How many jobs sit in these keys (lists and sorted sets). */
async function depth(keys: readonly string[]): Promise<number> {
  let n = 0;
  for (const k of keys) {
    const type = await redis.type(k);
    n += type === 'list' ? await redis.llen(k) : type === 'zset' ? await redis.zcard(k) : 0;
  }
  return n;
}

/**
 * Runs a process and SIGKILLs it at a random point of its work: the timer of `0..windowMs` starts
 * once `watch` keys have lost a job (the first batch has moved), so CLI start-up on a loaded
 * machine does not eat the window. A process that finishes first is not killed.
 */
function runAndKill(
  argv: string[],
  watch: readonly string[],
  windowMs: number,
  env: NodeJS.ProcessEnv = {},
): Promise<Killed> {
  return new Promise((resolve, reject) => {
    void depth(watch).then((before) => {
      const child = spawn(argv[0] ?? 'node', argv.slice(1), {
        cwd,
        env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '', ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      let armed = false;
      let done = false;
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      let timer: NodeJS.Timeout | undefined;
      const poll = async () => {
        while (!done && !armed) {
          if ((await depth(watch)) < before) {
            armed = true;
            timer = setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * windowMs));
            return;
          }
          await new Promise((r) => setTimeout(r, 5));
        }
      };
      void poll();
      child.on('error', reject);
      child.on('close', (code, signal) => {
        done = true;
        clearTimeout(killer);
        clearTimeout(timer);
        resolve({ code, signal, stderr, armed });
      });
    }, reject);
  });
}

/** Runs a process to its end. */
function runToEnd(argv: string[]): Promise<Killed> {
  return runAndKill(argv, [], 0);
}

const taskrecon = (...args: string[]) => [process.execPath, BIN, ...args];
const parts = (queue: string) => [key(queue), key(queue, ':delayed'), key(queue, ':reserved')];

/** 10k jobs at this rate take ~2 s a pass: the kill lands anywhere in it. */
const RATE = '5000';
const KILL_WINDOW_MS = 800;
/** Recover moves two thirds of the jobs; slower, so six kills never run out of work. */
const RECOVER_RATE = '2000';
const RECOVER_WINDOW_MS = 400;

beforeAll(async () => {
  redis = await openTestRedis(REDIS_DB);
  schema = await createTestSchema('queues_crash');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-crash-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'brokers:',
      ...laravelBrokerYaml('app', url, prefix, ['alpha', 'beta']),
      '    retryAfter: 90s',
      '',
    ].join('\n'),
  );
  const init = await runJson(['init', '--audit-only'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  await dropKeys().catch(() => undefined);
  redis?.disconnect();
  await schema?.drop();
});

// Each test starts from an empty prefix, whatever the one before left.
beforeEach(async () => {
  await dropKeys();
});

/** After a kill: every seeded job sits in exactly one list or set, and nothing else is there. */
async function expectEveryJobOnce(ids: Set<string>, attempt: number): Promise<void> {
  const after = await census(ids);
  expect({ attempt, lost: after.lost.length, doubled: after.doubled.length, foreign: after.foreign }).toEqual(
    {
      attempt,
      lost: 0,
      doubled: 0,
      foreign: 0,
    },
  );
}

describe('queues move and queues recover survive SIGKILL at any point', () => {
  it(`moves ${JOBS} jobs back and forth, killed ${KILLS_MOVE} times: none lost, none doubled`, async () => {
    const ids = await seed('alpha');
    const kills: Killed[] = [];
    // Each pass moves from the fuller queue to the other, so it has at least half the jobs to move
    // (over a second at the rate) and the kill lands inside it. A run the kill missed (it finished
    // first) is run again, within a bound.
    let round = 0;
    for (let attempt = 0; round < KILLS_MOVE && attempt < KILLS_MOVE + 10; attempt++) {
      const alphaFirst = (await depth(parts('alpha'))) >= (await depth(parts('beta')));
      const [from, to] = alphaFirst ? ['alpha', 'beta'] : ['beta', 'alpha'];
      const args = ['queues', 'move', '--broker', 'app', '--from', from, '--to', to, '--what', 'all'];
      const run = await runAndKill(
        taskrecon(...args, '--yes', '--rate', RATE, '--reason', 'crash test'),
        parts(from),
        KILL_WINDOW_MS,
      );
      kills.push(run);
      if (run.signal === 'SIGKILL' && run.armed) round++;
      await expectEveryJobOnce(ids, attempt);
    }
    // Killed mid-move (after it started moving, before it finished) the number of times promised.
    expect(round, kills.map((k) => `${k.code} ${k.signal} ${k.stderr}`).join('\n')).toBe(KILLS_MOVE);
    const done = await runToEnd(
      taskrecon(
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        'alpha',
        '--to',
        'beta',
        '--what',
        'all',
        '--yes',
      ),
    );
    expect(done.code, done.stderr).toBe(0);
    const final = await census(ids);
    expect(final.lost).toEqual([]);
    expect(final.doubled).toEqual([]);
    expect(Object.entries(final.byKey).filter(([k, n]) => k.startsWith('queues:alpha') && n > 0)).toEqual([]);
    await dropKeys();
  });

  it(`recovers overdue and expired jobs, killed ${KILLS_RECOVER} times: none lost, none doubled`, async () => {
    const ids = await seed('alpha');
    const kills: Killed[] = [];
    let round = 0;
    for (let attempt = 0; round < KILLS_RECOVER && attempt < KILLS_RECOVER + 6; attempt++) {
      const args = [
        'queues',
        'recover',
        '--broker',
        'app',
        '--queue',
        'alpha',
        '--yes',
        '--rate',
        RECOVER_RATE,
      ];
      const overdue = [key('alpha', ':delayed'), key('alpha', ':reserved')];
      const run = await runAndKill(taskrecon(...args), overdue, RECOVER_WINDOW_MS);
      kills.push(run);
      if (run.signal === 'SIGKILL' && run.armed) round++;
      await expectEveryJobOnce(ids, attempt);
    }
    expect(round, kills.map((k) => `${k.code} ${k.signal} ${k.stderr}`).join('\n')).toBe(KILLS_RECOVER);
    const done = await runToEnd(
      taskrecon('queues', 'recover', '--broker', 'app', '--queue', 'alpha', '--yes'),
    );
    expect(done.code, done.stderr).toBe(0);
    const final = await census(ids);
    expect({ lost: final.lost.length, doubled: final.doubled.length }).toEqual({ lost: 0, doubled: 0 });
    expect(final.byKey['queues:alpha']).toBe(JOBS);
    await dropKeys();
  });
});

// The classic design's mover, as the articles write it: read the due members, then per member ZREM
// and LPUSH in two calls. Two of them run at once (cron overlapping itself), and both are killed.
const CLASSIC_MOVER = `
import { createRequire } from 'node:module';
const { Redis } = createRequire(process.env.REPO_PACKAGE)('ioredis');
const [url, delayed, ready] = process.argv.slice(2);
const redis = new Redis(url);
for (;;) {
  const due = await redis.zrangebyscore(delayed, '-inf', Math.floor(Date.now() / 1000), 'LIMIT', 0, 100);
  if (due.length === 0) break;
  for (const member of due) {
    await redis.zrem(delayed, member);
    await redis.lpush(ready, member);
  }
}
process.exit(0);
`;

describe('the classic non-atomic mover fails the same census', () => {
  it('loses or doubles jobs when killed at random points', async () => {
    const ids = await seed('gamma');
    const script = join(cwd, 'classic-mover.mjs');
    writeFileSync(script, CLASSIC_MOVER);
    // The script resolves ioredis from this repository's node_modules.
    const env = { REPO_PACKAGE: join(REPO, 'package.json') };
    let broken = 0;
    let last: Census | undefined;
    for (let round = 0; round < 20 && broken === 0; round++) {
      const argv = [process.execPath, script, url, key('gamma', ':delayed'), key('gamma')];
      const watch = [key('gamma', ':delayed')];
      await Promise.all([runAndKill(argv, watch, 300, env), runAndKill(argv, watch, 300, env)]);
      last = await census(ids);
      broken = last.lost.length + last.doubled.length;
    }
    // The movers did run (the ready list grew past its seeded third) and broke the census.
    expect(last?.byKey['queues:gamma'] ?? 0).toBeGreaterThan(Math.ceil(JOBS / 3));
    expect(broken).toBeGreaterThan(0);
    console.log(`classic mover: ${last?.lost.length} lost, ${last?.doubled.length} doubled`);
    await dropKeys();
  });
});
