import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { perJob as auditPerJob } from '../support/audit-jobs.js';
import { runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { laravelBrokerYaml, openTestRedis } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';
import {
  createEffectsTable,
  effectRows,
  ensureLaravel,
  laravelDispatch,
  laravelWork,
  type EffectRow,
  type LaravelTarget,
} from '../support/laravel/laravel.js';

// The real Laravel 8 writes and runs the jobs: a deploy renamed the queue `default` to `default2`,
// so the workers consume `default2` while 5 ready jobs, 3 delayed ones and 2 reservations of a
// worker that died mid-job sit in `default`. taskrecon shows them and moves them; Laravel's own
// worker then runs every job exactly once.

const REDIS_DB = 13;
const RETRY_AFTER_SECONDS = 1;
const DELAY_SECONDS = 1;
const prefix = `tr_laravel_${randomBytes(4).toString('hex')}_`;

let schema: TestSchema;
let redis: Redis;
let target: LaravelTarget;
let cwd: string;

function perJob(rows: EffectRow[]): Map<string, EffectRow[]> {
  const map = new Map<string, EffectRow[]>();
  for (const row of rows) map.set(row.job_id, [...(map.get(row.job_id) ?? []), row]);
  return map;
}

async function clearEffects(): Promise<void> {
  await schema.sql.query('DELETE FROM effects');
}

async function dropKeys(): Promise<void> {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
}

/**
 * Moves every score of the queue's delayed and reserved sets back by `seconds`, as if Laravel had
 * written them that long ago: the delayed jobs became due and the worker holding the reservations
 * died that long ago (taskrecon reports both only past a grace period).
 */
async function age(queue: string, seconds: number): Promise<void> {
  for (const suffix of [':delayed', ':reserved']) {
    const k = `${prefix}queues:${queue}${suffix}`;
    const withScores = await redis.zrange(k, 0, -1, 'WITHSCORES');
    for (let i = 0; i < withScores.length; i += 2)
      await redis.zadd(k, 'XX', Number(withScores[i + 1]) - seconds, withScores[i] ?? '');
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  ensureLaravel();
  redis = await openTestRedis(REDIS_DB);
  schema = await createTestSchema('queues_laravel');
  await createEffectsTable(schema.sql);
  target = { redisDb: REDIS_DB, prefix, retryAfter: RETRY_AFTER_SECONDS, mysqlDatabase: schema.name };
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-laravel-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'brokers:',
      ...laravelBrokerYaml('app', `redis://127.0.0.1:6379/${REDIS_DB}`, prefix, ['default2']),
      `    retryAfter: ${RETRY_AFTER_SECONDS}s`,
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

describe('the Laravel harness itself: Laravel writes the jobs and its own worker runs them', () => {
  it('lays out ready, delayed and reserved jobs in the keys Laravel uses', async () => {
    const ids = await laravelDispatch(target, { queue: 'default', ready: 2, delayed: 1, reserved: 1 });
    expect(ids.ready).toHaveLength(2);
    expect(await redis.llen(`${prefix}queues:default`)).toBe(2);
    expect(await redis.zcard(`${prefix}queues:default:delayed`)).toBe(1);
    const [reserved] = await redis.zrange(`${prefix}queues:default:reserved`, 0, -1);
    // The reserved member is the pop script's re-encoding with attempts + 1.
    expect(JSON.parse(reserved ?? '{}')).toMatchObject({ id: ids.reserved[0], attempts: 1 });
    await dropKeys();
  });

  it('runs every job once on its own queue, the abandoned reservation on its second attempt', async () => {
    const ids = await laravelDispatch(target, {
      queue: 'default',
      ready: 3,
      delayed: 2,
      delaySeconds: DELAY_SECONDS,
      reserved: 1,
    });
    await sleep((Math.max(DELAY_SECONDS, RETRY_AFTER_SECONDS) + 1) * 1000);
    const run = await laravelWork(target, { queue: 'default' });
    expect(run).toMatchObject({ processed: 6, failed: 0 });
    const byJob = perJob(await effectRows(schema.sql));
    for (const id of [...ids.ready, ...ids.delayed])
      expect(byJob.get(id)?.map((r) => r.attempts)).toEqual([1]);
    expect(byJob.get(ids.reserved[0] ?? '')?.map((r) => r.attempts)).toEqual([2]);
    await clearEffects();
    await dropKeys();
  });

  it('can fail: a worker on the renamed queue runs none of the jobs left in the old one', async () => {
    await laravelDispatch(target, { queue: 'default', ready: 2 });
    const run = await laravelWork(target, { queue: 'default2' });
    expect(run.processed).toBe(0);
    expect(await effectRows(schema.sql)).toEqual([]);
    expect(await redis.llen(`${prefix}queues:default`)).toBe(2);
    await dropKeys();
  });
});

interface QueuesJson {
  brokers: Array<{ name: string; queues: Array<Record<string, number | string | null>> }>;
  findings: Array<{ code: string; queue: string | null; count: number | null }>;
}

describe('a queue renamed in a deploy: taskrecon moves its jobs and Laravel runs each exactly once', () => {
  it('shows, moves and lets Laravel run ready, delayed and reserved jobs', async () => {
    const ids = await laravelDispatch(target, {
      queue: 'default',
      ready: 5,
      delayed: 3,
      delaySeconds: DELAY_SECONDS,
      reserved: 2,
    });
    await age('default', 300);

    const shown = await runJson<QueuesJson>(['queues', '--broker', 'app'], { cwd });
    expect(shown.code, shown.stderr).toBe(1);
    assertMatchesSchema('queues', shown.json);
    const old = shown.json.brokers[0]?.queues.find((q) => q.name === 'default');
    expect(old).toMatchObject({ ready: 5, delayed: 3, delayedOverdue: 3, reserved: 2, reservedExpired: 2 });
    const codes = shown.json.findings.filter((f) => f.queue === 'default').map((f) => f.code);
    expect(codes).toEqual(
      expect.arrayContaining(['unknown-queue', 'delayed-overdue', 'reservation-expired']),
    );

    const moved = await runJson<{ matched: number; moved: number }>(
      [
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        'default',
        '--to',
        'default2',
        '--what',
        'all',
        '--yes',
        '--reason',
        'queue renamed in the deploy',
      ],
      { cwd },
    );
    expect(moved.code, moved.stderr).toBe(0);
    assertMatchesSchema('queues-move', moved.json);
    expect(moved.json).toMatchObject({ matched: 10, moved: 10 });
    for (const suffix of ['', ':delayed', ':reserved'])
      expect(await redis.exists(`${prefix}queues:default${suffix}`)).toBe(0);

    const run = await laravelWork(target, { queue: 'default2' });
    expect(run).toMatchObject({ processed: 10, failed: 0 });
    const byJob = perJob(await effectRows(schema.sql));
    expect(byJob.size).toBe(10);
    for (const id of [...ids.ready, ...ids.delayed])
      expect(byJob.get(id)?.map((r) => r.attempts)).toEqual([1]);
    // A reservation is moved as Laravel's worker migrates it: the reserved encoding, attempts counted.
    for (const id of ids.reserved) expect(byJob.get(id)?.map((r) => r.attempts)).toEqual([2]);
    for (const rows of byJob.values()) expect(rows.map((r) => r.queue)).toEqual(['default2']);

    // One audit row per moved job, with the reason.
    const [audit] = await schema.sql.query(
      "SELECT task_id, before_json FROM taskrecon_audit WHERE action = 'queue-move' AND reason = ?",
      ['queue renamed in the deploy'],
    );
    const audited = auditPerJob(audit as Array<Record<string, unknown>>);
    expect({ n: audited.length, jobs: new Set(audited.map((r) => r.task_id)).size }).toEqual({
      n: 10,
      jobs: 10,
    });
    await clearEffects();
    await dropKeys();
  });

  it('recovers overdue delayed jobs and expired reservations of a queue with no worker; Laravel runs each once', async () => {
    const ids = await laravelDispatch(target, {
      queue: 'default2',
      delayed: 3,
      delaySeconds: 60,
      reserved: 2,
    });
    await age('default2', 300);
    const recovered = await runJson<Array<{ moved: number }> | { moved: number }>(
      ['queues', 'recover', '--broker', 'app', '--queue', 'default2', '--yes'],
      { cwd },
    );
    expect(recovered.code, recovered.stderr).toBe(0);
    assertMatchesSchema('queues-recover', recovered.json);
    expect(await redis.llen(`${prefix}queues:default2`)).toBe(5);
    expect(await redis.zcard(`${prefix}queues:default2:delayed`)).toBe(0);
    expect(await redis.zcard(`${prefix}queues:default2:reserved`)).toBe(0);
    const run = await laravelWork(target, { queue: 'default2' });
    expect(run).toMatchObject({ processed: 5, failed: 0 });
    const byJob = perJob(await effectRows(schema.sql));
    expect(byJob.size).toBe(5);
    for (const id of ids.delayed) expect(byJob.get(id)?.map((r) => r.attempts)).toEqual([1]);
    for (const id of ids.reserved) expect(byJob.get(id)?.map((r) => r.attempts)).toEqual([2]);
    await clearEffects();
    await dropKeys();
  });
});
