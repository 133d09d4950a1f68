import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { createLaravelQueueTables } from '../support/fixtures.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * The sweep over Laravel failed jobs (database and Redis connections) and an async_task table in one
 * config, on every engine: every job retried exactly once however many sweeps run, one after
 * another or at the same time (two processes; the retry path's locked re-check and guarded delete
 * make the loser skip). What a sweep does to a task table alone (windows, blackouts, second
 * failures, alerts) is sweep-task-table.integration.test.ts.
 */
const REDIS_URL = 'redis://127.0.0.1:6379/14';
const RUN = randomBytes(4).toString('hex');
const DB_JOBS = 120;
const REDIS_JOBS = 5;

interface SweepJson {
  retried: number;
  deferred: number;
  held: number;
  secondFailures: number;
  lostRace: number;
  results: Array<{ source: string; id: number; rule: string; outcome: string; identity: string }>;
}

let redis: Redis;

function laravelPayload(uuid: string, job: string, n: number): string {
  return JSON.stringify({
    uuid,
    displayName: job,
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    maxTries: null,
    timeout: null,
    retryUntil: null,
    data: { commandName: job, command: `O:16:"${job}":1:{s:1:"n";i:${n};}` },
  }).replace(/\//g, '\\/');
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
});

afterAll(async () => {
  const keys = await redis?.keys(`tr_sweep_${RUN}_*`);
  if (keys?.length) await redis.del(...keys);
  redis?.disconnect();
});

describe.each(TEST_ENGINES)('sweep over Laravel failed jobs and a task table on %s', (engine) => {
  const prefix = `tr_sweep_${RUN}_${engine}_`;
  let db: EngineDb;
  let cwd: string;
  const payloads: string[] = [];
  const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);

  beforeAll(async () => {
    // Laravel writes failed_at as a wall-clock time in the app's zone (MySQL TIMESTAMP, PostgreSQL
    // timestamp without time zone); SQLite's CURRENT_TIMESTAMP is UTC text.
    db = await createEngineDb(engine, 'sweep_laravel', { timeZone: '-08:00' });
    await createLaravelQueueTables(db);
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-sweep-laravel-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        'appTimeZone: "-08:00"',
        'sources:',
        '  tasks: { profile: async-task, table: async_task, default: true }',
        '  failed:',
        '    profile: laravel-failed-jobs',
        '    queue:',
        '      connections:',
        '        database: { driver: database, table: jobs }',
        `        redis: { driver: redis, url: "${REDIS_URL}", prefix: "${prefix}" }`,
        'sweeps:',
        "  - { name: sms, match: { bizType: 'App\\Jobs\\SendSms' }, action: retry, rate: 50/s }",
        '  - { name: coupon, match: { bizType: coupon, source: tasks }, action: retry, maxSweeps: 1 }',
        "  - { name: schema, match: { errorLike: 'Unknown column' }, action: hold }",
        '',
      ].join('\n'),
    );
    expect((await runCli(['init', '--source', 'tasks'], { cwd })).code).toBe(0);
    const values: unknown[] = [];
    for (let n = 0; n < DB_JOBS + REDIS_JOBS; n++) {
      const uuid = randomUUID();
      const payload = laravelPayload(uuid, 'App\\Jobs\\SendSms', n);
      payloads.push(payload);
      values.push(uuid, n < DB_JOBS ? 'database' : 'redis', 'default', payload, 'Exception: sms 429');
    }
    await db.run(
      `INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) VALUES ${Array.from({ length: DB_JOBS + REDIS_JOBS }, () => '(?, ?, ?, ?, ?)').join(', ')}`,
      values,
    );
    const held = randomUUID();
    await db.run(
      'INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) VALUES (?, ?, ?, ?, ?)',
      [
        held,
        'database',
        'default',
        laravelPayload(held, 'App\\Jobs\\Report', 1),
        "SQLSTATE[42S22]: Column not found: 1054 Unknown column 'x'",
      ],
    );
    await db.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
       VALUES ('coupon', 'o1', 'coupon:o1', '{}', 3, 8, ${db.at(0)}, 'partner 500', ${db.at(-600)}, ${db.at(-300)}),
              ('coupon', 'o2', 'coupon:o2', '{}', 3, 8, ${db.at(0)}, 'partner 500', ${db.at(-600)}, ${db.at(-300)}),
              ('coupon', 'o3', 'coupon:o3', '{}', 3, 8, ${db.at(0)}, 'partner 500', ${db.at(-3 * 3600)}, ${db.at(-2 * 3600)})`,
    );
  });

  afterAll(async () => {
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('two sweeps at once retry each job exactly once', async () => {
    // A start line for both: the test holds the failed task rows locked, so each sweep reads its
    // plan and then waits at its first retry batch; once both wait, the lock goes and they race.
    const lock = await db.lock('SELECT id FROM async_task WHERE status = 3');
    const both = Promise.all([
      runJson<SweepJson>(['sweep', '--since', '1h'], { cwd }),
      runJson<SweepJson>(['sweep', '--since', '1h'], { cwd }),
    ]);
    if (db.lockWaits) {
      for (let waited = 0; ; waited += 100) {
        const [waiting] = await rows<{ n: number }>(db.lockWaits);
        if (Number(waiting?.n) >= 2) break;
        if (waited > 40_000) throw new Error('the two sweeps never both reached their first retry batch');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } else {
      // SQLite shows no waiting writer: hold the write lock well inside the sweeps' busy timeout
      // (5 s), long enough for both to have read their plan.
      await new Promise((resolve) => setTimeout(resolve, 2500));
    }
    await lock.rollback();
    const [a, b] = await both;
    expect([a.code, b.code]).toEqual([0, 0]);
    assertMatchesSchema('sweep', a.json);
    assertMatchesSchema('sweep', b.json);
    const total = DB_JOBS + REDIS_JOBS + 2;
    expect(a.json.retried + b.json.retried).toBe(total);
    // They did run at once: the loser of each locked batch met rows the other had retried, and
    // skipped them as lost races instead of pushing them again.
    expect(a.json.lostRace + b.json.lostRace).toBeGreaterThan(0);
    // Every row one sweep retried, the other either never saw or lost (never retried twice).
    const retriedIds = [...a.json.results, ...b.json.results]
      .filter((r) => r.outcome === 'retried')
      .map((r) => `${r.source}:${r.id}`);
    expect(new Set(retriedIds).size).toBe(total);
    // Deliveries: one jobs row per database job, one list entry (and notify entry) per Redis job.
    const jobs = await rows<{ payload: string; attempts: number }>('SELECT payload, attempts FROM jobs');
    expect(jobs.length).toBe(DB_JOBS);
    expect(new Set(jobs.map((j) => (JSON.parse(j.payload) as { uuid: string }).uuid)).size).toBe(DB_JOBS);
    // What queue:retry pushes: the stored payload as PHP re-encodes it (unchanged here), attempts 0.
    expect(new Set(jobs.map((j) => j.payload))).toEqual(new Set(payloads.slice(0, DB_JOBS)));
    expect(jobs.every((j) => j.attempts === 0)).toBe(true);
    expect(new Set(await redis.lrange(`${prefix}queues:default`, 0, -1))).toEqual(
      new Set(payloads.slice(DB_JOBS)),
    );
    expect(await redis.llen(`${prefix}queues:default`)).toBe(REDIS_JOBS);
    expect(await redis.llen(`${prefix}queues:default:notify`)).toBe(REDIS_JOBS);
    expect((await rows("SELECT id FROM taskrecon_audit WHERE action = 'sweep-retry'")).length).toBe(total);
    const remaining = await rows<{ uuid: string }>('SELECT uuid FROM failed_jobs');
    expect(remaining.length).toBe(1);
    // The task rows went failed → pending through the state machine, due now, attempts reset.
    const tasks = await rows<{ biz_id: string; status: number; retry_count: number }>(
      'SELECT biz_id, status, retry_count FROM async_task ORDER BY id',
    );
    expect(tasks).toEqual([
      { biz_id: 'o1', status: 0, retry_count: 0 },
      { biz_id: 'o2', status: 0, retry_count: 0 },
      { biz_id: 'o3', status: 3, retry_count: 8 },
    ]);
    expect(a.json.held + b.json.held).toBe(2);
  });

  it('a third sweep retries nothing and delivers nothing', async () => {
    const { code, json } = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
    expect(code).toBe(0);
    expect([json.retried, json.held, json.secondFailures]).toEqual([0, 1, 0]);
    expect((await rows('SELECT id FROM jobs')).length).toBe(DB_JOBS);
    expect(await redis.llen(`${prefix}queues:default`)).toBe(REDIS_JOBS);
  });
});
