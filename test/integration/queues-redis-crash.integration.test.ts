import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { perJob } from '../support/audit-jobs.js';
import { BIN, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { openTestRedis, laravelBrokerYaml } from '../support/redis.js';

// Crash safety of `queues move` and `queues recover`: 10k jobs in Laravel's key layout, the
// processes killed with SIGKILL at random points 20 times in all; after each kill every job is in
// exactly one place (counted by payload id across every list and sorted set of the prefix), and at
// the end every move of every job is in the audit log under the run that made it: replaying a
// job's audit rows from where it was seeded ends where the job is. The classic mover
// (ZRANGEBYSCORE, then ZREM and LPUSH per member) killed the same way loses or doubles jobs, and a
// killed move whose write-ahead intent is taken away leaves moves nobody audited, so both checks
// can fail.

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
/** Where each job was seeded: its payload uuid → its key (without the prefix). */
const seededAt = new Map<string, string>();

async function seed(queue: string, jobs = JOBS): Promise<Set<string>> {
  const ids = new Set<string>();
  const now = Math.floor(Date.now() / 1000);
  seededAt.clear();
  for (let start = 0; start < jobs; start += 1000) {
    const pipe = redis.pipeline();
    for (let i = start; i < Math.min(jobs, start + 1000); i++) {
      const id = randomBytes(16).toString('hex');
      ids.add(id);
      const [suffix, payload] =
        i % 3 === 0
          ? ['', laravelPayload(id, 0)]
          : i % 3 === 1
            ? [':delayed', laravelPayload(id, 0)]
            : [':reserved', laravelPayload(id, 1)];
      seededAt.set((JSON.parse(payload) as { uuid: string }).uuid, `queues:${queue}${suffix}`);
      if (suffix === '') pipe.rpush(key(queue), payload);
      else pipe.zadd(key(queue, suffix), now - (suffix === ':delayed' ? 60 : 30) - (i % 500), payload);
    }
    await pipe.exec();
  }
  return ids;
}

interface Replay {
  /** Audit rows of the moves and recovers of this prefix. */
  rows: number;
  /** Jobs whose audit trail does not lead from where they were seeded to where they are. */
  unaccounted: string[];
  /** Audit rows whose run opened no intent (a run nobody can name). */
  unknownRuns: number;
  openIntents: number;
}

/**
 * Replays each job's audit rows (in order) from where it was seeded: each row must start where the
 * job was, and the last must end where the job is. A move nobody audited breaks the chain.
 */
async function replayAudit(after: Census): Promise<Replay> {
  const [rows] = await schema.sql.query(
    `SELECT task_id, run_id, before_json, after_json FROM taskrecon_audit
      WHERE action IN ('queue-move', 'queue-recover') AND task_table LIKE ? ORDER BY id`,
    [`${prefix}%`],
  );
  const at = new Map(seededAt);
  const unaccounted = new Set<string>();
  const audit = perJob(
    rows as Array<{ task_id: string; run_id: string; before_json: string; after_json: string }>,
  );
  for (const row of audit) {
    const from = (JSON.parse(row.before_json) as { queue: string }).queue.slice(prefix.length);
    const to = (JSON.parse(row.after_json) as { queue: string }).queue.slice(prefix.length);
    if (at.get(row.task_id) !== from) unaccounted.add(row.task_id);
    at.set(row.task_id, to);
  }
  for (const [uuid, key] of after.where) if (at.get(uuid) !== key) unaccounted.add(uuid);
  const [runs] = await schema.sql.query('SELECT DISTINCT run_id FROM taskrecon_intent');
  const known = new Set((runs as Array<{ run_id: string }>).map((r) => r.run_id));
  const [open] = await schema.sql.query("SELECT COUNT(*) AS n FROM taskrecon_intent WHERE state = 'open'");
  return {
    rows: audit.length,
    unaccounted: [...unaccounted],
    unknownRuns: audit.filter((r) => !known.has(r.run_id)).length,
    openIntents: Number((open as Array<{ n: number }>)[0]?.n),
  };
}

/** Open intents whose batch landed (its marker lists the moved jobs): a kill between move and settle. */
async function landedOpenIntents(): Promise<Array<{ id: number; run_id: string }>> {
  const [rows] = await schema.sql.query("SELECT id, run_id FROM taskrecon_intent WHERE state = 'open'");
  const out: Array<{ id: number; run_id: string }> = [];
  for (const row of rows as Array<{ id: number; run_id: string }>)
    if ((await redis.type(`taskrecon:intent:${row.run_id}:${row.id}`)) === 'list') out.push(row);
  return out;
}

interface Census {
  lost: string[];
  doubled: string[];
  foreign: number;
  byKey: Record<string, number>;
  /** Where each job is: its payload uuid → the key (without the prefix) holding it. */
  where: Map<string, string>;
}

/** Where every job is: counts by payload id over every list and sorted set of the prefix. */
async function census(expected: Set<string>): Promise<Census> {
  const seen = new Map<string, number>();
  const where = new Map<string, string>();
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
      let uuid: unknown;
      try {
        ({ id, uuid } = JSON.parse(member) as { id?: unknown; uuid?: unknown });
      } catch {
        id = undefined;
      }
      if (typeof id !== 'string' || !expected.has(id)) {
        foreign++;
        continue;
      }
      seen.set(id, (seen.get(id) ?? 0) + 1);
      where.set(String(uuid), k.slice(prefix.length));
    }
  }
  return {
    lost: [...expected].filter((id) => !seen.has(id)),
    doubled: [...seen].filter(([, n]) => n > 1).map(([id]) => id),
    foreign,
    byKey,
    where,
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

// Each test starts from an empty prefix and an empty audit log, whatever the one before left.
beforeEach(async () => {
  await dropKeys();
  await schema.sql.query('DELETE FROM taskrecon_audit');
  await schema.sql.query('DELETE FROM taskrecon_intent');
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
    let landedUnsettled = 0;
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
      landedUnsettled += (await landedOpenIntents()).length;
    }
    console.log(`move: ${landedUnsettled} kills landed between a batch and its settlement`);
    // Killed mid-move (after it started moving, before it finished) the number of times promised.
    expect(round, kills.map((k) => `${k.code} ${k.signal} ${k.stderr}`).join('\n')).toBe(KILLS_MOVE);
    // The rest from the fuller queue: a kill that landed after the last batch moved leaves the
    // other queue with no key at all (a move from it is refused as a queue that does not exist).
    const [from, to] =
      (await depth(parts('alpha'))) >= (await depth(parts('beta'))) ? ['alpha', 'beta'] : ['beta', 'alpha'];
    const done = await runToEnd(
      taskrecon('queues', 'move', '--broker', 'app', '--from', from, '--to', to, '--what', 'all', '--yes'),
    );
    expect(done.code, done.stderr).toBe(0);
    const final = await census(ids);
    expect(final.lost).toEqual([]);
    expect(final.doubled).toEqual([]);
    expect(Object.entries(final.byKey).filter(([k, n]) => k.startsWith(`queues:${from}`) && n > 0)).toEqual(
      [],
    );
    // Every move of every job audited under the run that made it, the killed ones included.
    const replay = await replayAudit(final);
    expect({ ...replay, unaccounted: replay.unaccounted.length, rows: replay.rows >= JOBS }).toEqual({
      rows: true,
      unaccounted: 0,
      unknownRuns: 0,
      openIntents: 0,
    });
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
    const replay = await replayAudit(final);
    expect({ ...replay, unaccounted: replay.unaccounted.length }).toEqual({
      rows: JOBS - Math.ceil(JOBS / 3),
      unaccounted: 0,
      unknownRuns: 0,
      openIntents: 0,
    });
    await dropKeys();
  });

  it('without the write-ahead intent, a move killed after its batch landed goes unaudited', async () => {
    // The same replay, with the intent of a killed run's landed batch taken away (as a mover
    // without intents would leave it): its jobs moved and no audit row says so.
    const jobs = 3000;
    const ids = await seed('delta', jobs);
    let landed: Array<{ id: number; run_id: string }> = [];
    for (let attempt = 0; landed.length === 0 && attempt < 40; attempt++) {
      const [from, to] =
        (await depth(parts('delta'))) >= (await depth(parts('epsilon')))
          ? ['delta', 'epsilon']
          : ['epsilon', 'delta'];
      const args = [
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        from,
        '--to',
        to,
        '--what',
        'all',
        '--yes',
      ];
      await runAndKill(taskrecon(...args, '--batch', '20'), parts(from), 150);
      await expectEveryJobOnce(ids, attempt);
      landed = await landedOpenIntents();
    }
    expect(landed.length, 'no kill landed between a batch and its settlement in 40 tries').toBeGreaterThan(0);
    for (const intent of landed)
      await schema.sql.query('DELETE FROM taskrecon_intent WHERE id = ?', [intent.id]);
    const done = await runToEnd(
      taskrecon(
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        'delta',
        '--to',
        'epsilon',
        '--what',
        'all',
        '--yes',
      ),
    );
    expect(done.code, done.stderr).toBe(0);
    const final = await census(ids);
    expect({ lost: final.lost.length, doubled: final.doubled.length }).toEqual({ lost: 0, doubled: 0 });
    const replay = await replayAudit(final);
    expect(replay.unaccounted.length).toBeGreaterThan(0);
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

interface MoveJson {
  runId: string;
  moved: number;
  settledIntents?: Array<{ id: number; runId: string; state: string }>;
}

/** Resolves once `check` holds (polled), or fails after `ms`. */
async function until(check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('moves running at once on one broker', () => {
  it('two moves of one queue at once, four times over: both exit 0, every job moved and audited once a round, no batch settled by the other', async () => {
    const jobs = 15_000;
    const rounds = 4;
    const ids = await seed('zeta', jobs);
    for (let round = 0; round < rounds; round++) {
      const [from, to] = round % 2 === 0 ? ['zeta', 'eta'] : ['eta', 'zeta'];
      const move = [
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        from,
        '--to',
        to,
        '--what',
        'all',
        '--yes',
      ];
      // The second starts while the first is moving and settles open batches before it moves.
      // Batches of 500 keep the first's intent open most of the time (its script and its 500 audit
      // rows): a settlement that did not tell a live run from a killed one fences that batch, and
      // the first run stops with exit 3 (it did in about one round in three).
      // Both paced (three seconds for the queue at least), so the second always starts on a queue
      // the first is still moving: unpaced, the first can empty it before the second is up.
      const paced = [...move, '--batch', '500', '--rate', '5000/s'];
      const first = runJson<MoveJson>(paced, { cwd });
      await until(async () => (await depth(parts(from))) < jobs);
      const second = runJson<MoveJson>(paced, { cwd });
      const [a, b] = await Promise.all([first, second]);
      expect({ round, codes: [a.code, b.code] }, `${a.stderr}\n${b.stderr}`).toEqual({
        round,
        codes: [0, 0],
      });
      expect([a.json.settledIntents ?? [], b.json.settledIntents ?? []]).toEqual([[], []]);
      expect(a.json.moved + b.json.moved).toBe(jobs);
      await expectEveryJobOnce(ids, round);
    }
    const final = await census(ids);
    // An even number of rounds: every job is back in zeta.
    expect(Object.entries(final.byKey).filter(([k, n]) => k.startsWith('queues:eta') && n > 0)).toEqual([]);
    // One audit row per job and round, under the run that moved it; the chain leads to where it is.
    const [moves] = await schema.sql.query(
      `SELECT task_id, before_json FROM taskrecon_audit WHERE action = 'queue-move' AND task_table LIKE ?`,
      [`${prefix}%`],
    );
    const perId = new Map<string, number>();
    for (const r of perJob(moves as Array<{ task_id: string; before_json: string }>))
      perId.set(r.task_id, (perId.get(r.task_id) ?? 0) + 1);
    const counts = [...perId.values()];
    const row = { ids: perId.size, least: Math.min(...counts), most: Math.max(...counts) };
    expect([Number(row?.ids), Number(row?.least), Number(row?.most)]).toEqual([jobs, rounds, rounds]);
    const replay = await replayAudit(final);
    expect({
      unaccounted: replay.unaccounted.length,
      unknownRuns: replay.unknownRuns,
      open: replay.openIntents,
    }).toEqual({ unaccounted: 0, unknownRuns: 0, open: 0 });
    await dropKeys();
  });

  it('leaves the open batch of a run still connected, and fences it once that run is gone', async () => {
    // A run that has committed a batch's intent and not yet run its script: its connection named
    // after it is open. Another move must leave that batch to it (before, it fenced it off and the
    // first run stopped with exit 3); once the connection is gone, the batch is settled as before.
    await seed('theta', 300);
    const runId = randomUUID();
    const live = new Redis(url, { connectionName: `taskrecon-run-${runId}` });
    await live.ping();
    const detail = { from: key('theta'), to: key('iota'), fromSet: 'ready', toSet: 'ready' };
    const [inserted] = await schema.sql.query(
      `INSERT INTO taskrecon_intent (run_id, kind, source, from_ref, to_ref, operator, host, action, jobs, detail, state, opened_epoch)
       VALUES (?, 'redis-move', 'app', ?, ?, 'test', 'test', 'queue-move', '[]', ?, 'open', UNIX_TIMESTAMP())`,
      [runId, detail.from, detail.to, JSON.stringify(detail)],
    );
    const intentId = (inserted as { insertId: number }).insertId;
    const marker = `taskrecon:intent:${runId}:${intentId}`;
    const state = async () => {
      const [rows] = await schema.sql.query('SELECT state FROM taskrecon_intent WHERE id = ?', [intentId]);
      return (rows as Array<{ state: string }>)[0]?.state;
    };
    const move = [
      'queues',
      'move',
      '--broker',
      'app',
      '--from',
      'theta',
      '--to',
      'iota',
      '--what',
      'all',
      '--yes',
    ];
    try {
      const alive = await runJson<MoveJson>(move, { cwd });
      expect(alive.code, alive.stderr).toBe(0);
      expect(alive.json.moved).toBe(300);
      expect(alive.json.settledIntents ?? []).toEqual([]);
      expect([await state(), await redis.exists(marker)]).toEqual(['open', 0]);
    } finally {
      live.disconnect();
    }
    await until(async () => !String(await redis.client('LIST')).includes(`taskrecon-run-${runId}`));
    await seed('theta', 30);
    const gone = await runJson<MoveJson>(move, { cwd });
    if (gone.code) console.log(JSON.stringify(gone.json));
    expect(gone.code, gone.stderr).toBe(0);
    expect((gone.json.settledIntents ?? []).map((s) => [s.id, s.state])).toEqual([[intentId, 'not-landed']]);
    expect([await state(), await redis.get(marker)]).toEqual(['not-landed', 'fenced']);
    await redis.del(marker);
    await dropKeys();
  });
});
