import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { dropPrefix, openTestRedis } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { openRedisBroker } from '../../src/brokers/redis/index.js';
import { runWorker, testQueue } from '../support/bullmq/worker.js';

// The real BullMQ 5 writes, fails and runs the jobs: its Worker throws to plant failures, a worker
// process killed with SIGKILL mid-job leaves stalled jobs. taskrecon counts them, retries and
// recovers them through BullMQ's own API, and a BullMQ Worker then runs each exactly once.

const REDIS_DB = 12;
const prefix = `trtest-bullmq-${randomBytes(4).toString('hex')}`;
const HANG_WORKER = fileURLToPath(new URL('../support/bullmq/hang-worker.mjs', import.meta.url));
const LOCK_MS = 1000;

let schema: TestSchema;
let redis: Redis;
let cwd: string;
const queues: Queue[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function queue(name: string): Queue {
  const q = testQueue(REDIS_DB, prefix, name);
  queues.push(q);
  return q;
}

/** A digest of every key of this file's prefix: equal before and after means nothing was written. */
async function digestPrefix(): Promise<string> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  keys.sort();
  const hash = createHash('sha256');
  for (const key of keys) hash.update(key).update((await redis.dump(key)) ?? '');
  return hash.digest('hex');
}

async function auditCount(runId: string, action: string): Promise<{ n: number; jobs: number }> {
  const [rows] = await schema.sql.query(
    'SELECT COUNT(*) AS n, COUNT(DISTINCT task_id) AS jobs FROM taskrecon_audit WHERE run_id = ? AND action = ?',
    [runId, action],
  );
  const row = (rows as Array<{ n: number | string; jobs: number | string }>)[0];
  return { n: Number(row?.n), jobs: Number(row?.jobs) };
}

/** Plants `n` failed jobs in `name` with a real BullMQ Worker that throws; returns their ids. */
async function plantFailures(name: string, n: number): Promise<string[]> {
  const q = queue(name);
  const jobs = await q.addBulk(
    Array.from({ length: n }, (_, i) => ({ name: 'send-mail', data: { to: `user${i}@example.com` } })),
  );
  await runWorker(REDIS_DB, prefix, name, {
    fail: true,
    until: async () => (await q.getJobCounts('failed')).failed === n,
  });
  return jobs.map((j) => String(j.id));
}

/** Runs a succeeding worker until `n` jobs of `name` completed, then a moment longer to catch a double run. */
async function completeAll(name: string, n: number): Promise<Map<string, number>> {
  const q = queue(name);
  return runWorker(REDIS_DB, prefix, name, {
    until: async () => {
      if (((await q.getJobCounts('completed')).completed ?? 0) < n) return false;
      await sleep(300);
      return true;
    },
  });
}

interface QueuesJson {
  brokers: Array<{
    name: string;
    framework: string;
    queues: Array<{
      name: string;
      reserved: number | null;
      reservedExpired: number | null;
      bullmq?: Record<string, number | string[]>;
      failedJobs?: Array<{
        jobId: string;
        name: string;
        data: unknown;
        failedReason: string | null;
        stacktrace: string[];
        attemptsMade: number;
      }>;
    }>;
  }>;
  findings: Array<{ code: string; queue: string | null; count: number | null }>;
}

interface MoveJson {
  matched: number;
  moved: number;
  runId: string;
  dryRun: boolean;
}

beforeAll(async () => {
  redis = await openTestRedis(REDIS_DB);
  schema = await createTestSchema('queues_bullmq');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bullmq-'));
  const url = `redis://127.0.0.1:6379/${REDIS_DB}`;
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'brokers:',
      '  app:',
      '    kind: redis',
      `    url: ${url}`,
      '    framework: bullmq',
      `    prefix: ${prefix}`,
      '  wrong:',
      '    kind: redis',
      `    url: ${url}`,
      '    framework: bullmq',
      `    prefix: ${prefix}-other`,
      '',
    ].join('\n'),
  );
  const init = await runJson(['init', '--audit-only'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  for (const q of queues) await q.close().catch(() => undefined);
  await dropPrefix(redis, `${prefix}:`).catch(() => undefined);
  redis?.disconnect();
  await schema?.drop();
});

describe('BullMQ failed jobs: counted exactly, shown with their error, retried through BullMQ', () => {
  it('counts every state as BullMQ does and shows failed payloads and errors', async () => {
    const ids = await plantFailures('mail', 5);
    await queue('mail').add('send-mail', { to: 'later@example.com' }, { delay: 600_000 });
    const { code, json } = await runJson<QueuesJson>(['queues', '--broker', 'app', '--peek', '2'], { cwd });
    // Exit 1 only for broker-wide findings of this Redis (persistence), none for the queue.
    expect(json.findings.filter((f) => f.queue !== null)).toEqual([]);
    expect(code).toBe(json.findings.length ? 1 : 0);
    assertMatchesSchema('queues', json);
    const broker = json.brokers[0];
    expect(broker?.framework).toBe('bullmq');
    const mail = broker?.queues.find((q) => q.name === 'mail');
    expect(mail?.bullmq).toMatchObject({
      failed: 5,
      delayed: 1,
      wait: 0,
      active: 0,
      completed: 0,
      stalled: 0,
    });
    expect(mail?.failedJobs).toHaveLength(2);
    const detail = mail?.failedJobs?.[0];
    expect(ids).toContain(detail?.jobId);
    expect(detail).toMatchObject({ name: 'send-mail', failedReason: 'boom in send-mail', attemptsMade: 1 });
    expect(detail?.data).toMatchObject({ to: expect.stringMatching(/@example\.com$/) });
    expect(detail?.stacktrace[0]).toContain('boom in send-mail');
    expect(json.findings.filter((f) => f.code === 'stalled-jobs')).toEqual([]);
    await queue('mail').obliterate({ force: true });
  });

  it('--dry-run writes nothing; --limit bounds; a BullMQ Worker then runs each retried job exactly once', async () => {
    const ids = await plantFailures('retry', 5);
    const before = await digestPrefix();
    const dry = await runJson<MoveJson>(
      ['queues', 'move', '--broker', 'app', '--from', 'retry', '--what', 'failed', '--dry-run'],
      { cwd },
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({ dryRun: true, matched: 5, moved: 0 });
    expect(await digestPrefix()).toBe(before);

    const first = await runJson<MoveJson>(
      ['queues', 'move', '--broker', 'app', '--from', 'retry', '--what', 'failed', '--limit', '2', '--yes'],
      { cwd },
    );
    expect(first.code, first.stderr).toBe(0);
    expect(first.json).toMatchObject({ matched: 2, moved: 2 });
    assertMatchesSchema('queues-move', first.json);
    expect(await queue('retry').getJobCounts('failed', 'wait')).toEqual({ failed: 3, wait: 2 });
    const rest = await runJson<MoveJson>(
      [
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        'retry',
        '--what',
        'failed',
        '--yes',
        '--reason',
        'smtp back',
      ],
      { cwd },
    );
    expect(rest.code, rest.stderr).toBe(0);
    expect(rest.json).toMatchObject({ matched: 3, moved: 3 });
    expect(await auditCount(first.json.runId, 'queue-move')).toEqual({ n: 2, jobs: 2 });
    expect(await auditCount(rest.json.runId, 'queue-move')).toEqual({ n: 3, jobs: 3 });

    const runs = await completeAll('retry', 5);
    expect([...runs.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(runs.get(id)).toBe(1);
    expect(await queue('retry').getJobCounts('failed', 'completed')).toEqual({ failed: 0, completed: 5 });
    await queue('retry').obliterate({ force: true });
  });

  it('--to another queue: added there with the same name and data, gone from the failed set', async () => {
    await plantFailures('inbox', 3);
    await queue('inbox2').add('send-mail', { to: 'seed@example.com' });
    await completeAll('inbox2', 1);
    const moved = await runJson<MoveJson>(
      ['queues', 'move', '--broker', 'app', '--from', 'inbox', '--to', 'inbox2', '--what', 'failed', '--yes'],
      { cwd },
    );
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.json).toMatchObject({ matched: 3, moved: 3 });
    expect((await queue('inbox').getJobCounts('failed')).failed).toBe(0);
    const runs = await completeAll('inbox2', 4);
    expect([...runs.values()]).toEqual([1, 1, 1]);
    const done = await queue('inbox2').getCompleted(0, -1);
    expect(done.filter((j) => j.name === 'send-mail')).toHaveLength(4);
    expect(await auditCount(moved.json.runId, 'queue-move')).toEqual({ n: 3, jobs: 3 });
  });
});

describe('BullMQ stalled jobs: a worker killed mid-job', () => {
  it('leaves jobs queues reports as stalled; recover returns them to wait; a worker completes each once', async () => {
    const q = queue('crash');
    const jobs = await q.addBulk(
      Array.from({ length: 3 }, (_, i) => ({ name: 'charge', data: { order: i } })),
    );
    const ids = jobs.map((j) => String(j.id));
    const child = spawn(
      process.execPath,
      [HANG_WORKER, String(REDIS_DB), prefix, 'crash', '3', String(LOCK_MS)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const deadline = Date.now() + 20_000;
    while (((await q.getJobCounts('active')).active ?? 0) < 3) {
      if (Date.now() > deadline) throw new Error('the hanging worker took no job');
      await sleep(50);
    }
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await sleep(LOCK_MS * 2);

    const { code, json } = await runJson<QueuesJson>(['queues', '--broker', 'app'], { cwd });
    expect(code).toBe(1);
    const crash = json.brokers[0]?.queues.find((x) => x.name === 'crash');
    expect(crash?.bullmq).toMatchObject({ active: 3, stalled: 3, wait: 0 });
    expect(crash?.reservedExpired).toBe(3);
    assertMatchesSchema('queues', json);
    expect(json.findings.find((f) => f.code === 'stalled-jobs')).toMatchObject({ queue: 'crash', count: 3 });

    const before = await digestPrefix();
    const dry = await runJson<{ matched: number; moved: number }>(
      ['queues', 'recover', '--broker', 'app', '--queue', 'crash', '--dry-run'],
      { cwd },
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({ matched: 3, moved: 0 });
    expect(await digestPrefix()).toBe(before);

    const rec = await runJson<{ matched: number; moved: number; runId: string }>(
      ['queues', 'recover', '--broker', 'app', '--queue', 'crash', '--yes'],
      { cwd },
    );
    expect(rec.json).toMatchObject({ matched: 3, moved: 3 });
    expect(rec.code, rec.stderr).toBe(0);
    assertMatchesSchema('queues-recover', rec.json);
    expect(await q.getJobCounts('active', 'wait')).toEqual({ active: 0, wait: 3 });
    expect(await auditCount(rec.json.runId, 'queue-recover')).toEqual({ n: 3, jobs: 3 });

    const runs = await completeAll('crash', 3);
    for (const id of ids) expect(runs.get(id)).toBe(1);
  });
});

describe('BullMQ doctor: the key layout check reads BullMQ queues', () => {
  it('finds the queues of the prefix, and names the real prefix when pointed at another', async () => {
    await plantFailures('doc', 1);
    const url = `redis://127.0.0.1:6379/${REDIS_DB}`;
    const layoutCheck = async (p: string) => {
      const broker = await openRedisBroker('app', { kind: 'redis', url, framework: 'bullmq', prefix: p });
      try {
        return (await broker.doctor()).find((c) => c.name === 'app: key layout');
      } finally {
        await broker.close();
      }
    };
    const good = await layoutCheck(prefix);
    expect(good?.status).toBe('ok');
    expect(good?.detail).toMatch(/queue\(s\) found/);
    const wrong = await layoutCheck(`${prefix}-other`);
    expect(wrong?.status).toBe('fail');
    expect(wrong?.detail).toContain(`'${prefix}'`);
  });
});

describe('BullMQ bad input: exit 3, a clear message, nothing written', () => {
  it('a broker pointed at a prefix with no BullMQ queue', async () => {
    await plantFailures('other', 1);
    const before = await digestPrefix();
    const list = await runJson<{ error: { message: string } }>(['queues', '--broker', 'wrong'], { cwd });
    expect(list.code).toBe(3);
    expect(list.json.error.message).toContain(`no BullMQ queue with prefix '${prefix}-other'`);
    expect(list.json.error.message).toContain(`'${prefix}'`);
    const move = await runJson<{ error: { message: string } }>(
      ['queues', 'move', '--broker', 'wrong', '--from', 'other', '--what', 'failed', '--yes'],
      { cwd },
    );
    expect(move.code).toBe(3);
    expect(move.json.error.message).toContain('other');
    const rec = await runJson(['queues', 'recover', '--broker', 'wrong', '--yes'], { cwd });
    expect(rec.code).toBe(3);
    expect(await digestPrefix()).toBe(before);
    expect(await redis.keys(`${prefix}-other*`)).toEqual([]);
  });

  it('a move of a job BullMQ no longer holds as failed: exit 3, nothing moved, the others stay failed', async () => {
    const [a, b] = await plantFailures('named', 2);
    const one = await runJson<MoveJson>(
      [
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        'named',
        '--what',
        'failed',
        '--job',
        a as string,
        '--yes',
      ],
      { cwd },
    );
    expect(one.code, one.stderr).toBe(0);
    expect(one.json).toMatchObject({ matched: 1, moved: 1 });
    expect(await auditCount(one.json.runId, 'queue-move')).toEqual({ n: 1, jobs: 1 });
    const before = await digestPrefix();
    const again = await runJson<{ error: { message: string; hint: string } }>(
      [
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        'named',
        '--what',
        'failed',
        '--job',
        b as string,
        '--job',
        a as string,
        '--yes',
      ],
      { cwd },
    );
    expect(again.code).toBe(3);
    expect(again.json.error.message).toContain(`BullMQ holds no failed job ${a} (waiting)`);
    expect(again.json.error.hint).toContain('Nothing was moved');
    expect(await digestPrefix()).toBe(before);
    expect(await queue('named').getJobState(b as string)).toBe('failed');
  });

  it('a move from a queue BullMQ does not hold, or of a set taskrecon does not move', async () => {
    const before = await digestPrefix();
    const gone = await runJson<{ error: { message: string } }>(
      ['queues', 'move', '--broker', 'app', '--from', 'nosuch', '--what', 'failed', '--yes'],
      { cwd },
    );
    expect(gone.code).toBe(3);
    expect(gone.json.error.message).toContain('nosuch');
    const ready = await runJson(
      ['queues', 'move', '--broker', 'app', '--from', 'other', '--to', 'inbox2', '--what', 'ready', '--yes'],
      { cwd },
    );
    expect(ready.code).toBe(3);
    expect(await digestPrefix()).toBe(before);
  });
});
