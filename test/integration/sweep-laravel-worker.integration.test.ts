import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { runJson } from '../support/cli.js';
import {
  createEffectsTable,
  effectRows,
  ensureLaravel,
  laravelDispatch,
  laravelWork,
  type LaravelTarget,
} from '../support/laravel/laravel.js';
import { createFixtureTable } from '../support/fixtures.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

/**
 * What the sweep re-pushes, Laravel's own worker runs: real Laravel 8 jobs (pushed by its
 * RedisQueue) are moved into failed_jobs as its failer stores them (the reserved payload, attempts
 * spent), swept, and then run by Illuminate\Queue\Worker — each exactly once.
 *
 * On MySQL/MariaDB: this is about the PHP worker, not the engine. The sweep itself runs on every
 * engine in sweep-laravel.integration.test.ts, and Laravel's worker over PostgreSQL in
 * postgres-laravel-worker.integration.test.ts.
 */
const REDIS_DB = 14;
const JOBS = 4;

let schema: TestSchema;
let cwd: string;
let redis: Redis;
let target: LaravelTarget;
const prefix = `tr_sweepw_${randomBytes(4).toString('hex')}_`;
const queue = 'default';

beforeAll(async () => {
  ensureLaravel();
  schema = await createTestSchema('sweep_worker');
  await createFixtureTable(schema, 'laravel_failed_jobs');
  await createEffectsTable(schema.sql);
  redis = new Redis(`redis://127.0.0.1:6379/${REDIS_DB}`, { maxRetriesPerRequest: 1 });
  try {
    await redis.ping();
  } catch (error) {
    throw new Error(
      `Redis on 127.0.0.1:6379 is unreachable (start it: redis-server --daemonize yes): ${String(error)}`,
    );
  }
  target = { redisDb: REDIS_DB, prefix, retryAfter: 90, mysqlDatabase: schema.name };
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-sweep-worker-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'sources:',
      '  failed:',
      '    profile: laravel-failed-jobs',
      `    queue: { connections: { redis: { driver: redis, url: "redis://127.0.0.1:6379/${REDIS_DB}", prefix: "${prefix}" } } }`,
      'sweeps:',
      '  - { name: effects, match: { bizType: EffectJob }, action: retry }',
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  const keys = await redis?.keys(`${prefix}*`);
  if (keys?.length) await redis.del(...keys);
  redis?.disconnect();
  await schema?.drop();
});

describe("the sweep's re-push, run by Laravel's own worker", () => {
  it('runs every swept job once', async () => {
    const ids = await laravelDispatch(target, { queue, ready: JOBS });
    expect(ids.ready.length).toBe(JOBS);
    // Laravel's failer stores the reserved payload (attempts spent) with the job's uuid.
    const raw = await redis.lrange(`${prefix}queues:${queue}`, 0, -1);
    await redis.del(`${prefix}queues:${queue}`, `${prefix}queues:${queue}:notify`);
    for (const payload of raw) {
      const spent = payload.replace(/"attempts":\d+/, '"attempts":3');
      const uuid = (JSON.parse(payload) as { uuid: string }).uuid;
      await schema.sql.query(
        'INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) VALUES (?, ?, ?, ?, ?)',
        [uuid, 'redis', queue, spent, 'RuntimeException: sms 429'],
      );
    }
    const init = await runJson(['init', '--audit-only', '--profile', 'laravel-failed-jobs'], { cwd });
    expect(init.code).toBe(0);
    const swept = await runJson<{ retried: number }>(['sweep'], { cwd });
    expect(swept.code).toBe(0);
    expect(swept.json.retried).toBe(JOBS);
    const run = await laravelWork(target, { queue });
    expect(run.processed).toBe(JOBS);
    expect(run.failed).toBe(0);
    const effects = await effectRows(schema.sql);
    expect(effects.map((e) => e.job_id).sort()).toEqual([...ids.ready].sort());
    // attempts was reset: the worker counts this run as the job's first.
    expect(effects.every((e) => e.attempts === 1)).toBe(true);
  });
});
