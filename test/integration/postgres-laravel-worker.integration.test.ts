import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import {
  ensureLaravel,
  laravelDispatch,
  laravelWork,
  type LaravelTarget,
} from '../support/laravel/laravel.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

/**
 * Laravel's database queue on PostgreSQL, run by Laravel 8's own worker (Debian's
 * php-laravel-framework over php-pgsql): jobs pushed by its DatabaseQueue fail while their service
 * is down and Laravel's failer stores them in `failed_jobs`; `compensate --action retry` pushes
 * them back into the `jobs` table and Laravel's worker runs each exactly once.
 */
const QUEUE = 'coupons';
const JOBS = 4;
const FAILING = ['ready-0', 'ready-1', 'ready-2'];

let db: PgTestDatabase;
let cwd: string;
let target: LaravelTarget;

interface CompensateJson {
  matched: number;
  applied: number;
  results: Array<{ id: number; from: string | null; to: string; outcome: string }>;
}

/** Effect rows per label: how many times each job's handler ran to the end. */
async function runsPerLabel(): Promise<Record<string, number>> {
  const rows = await db.rows<{ label: string; n: string }>(
    'SELECT label, count(*) AS n FROM effects GROUP BY label ORDER BY label',
  );
  return Object.fromEntries(rows.map((r) => [r.label, Number(r.n)]));
}

beforeAll(async () => {
  ensureLaravel({ pgsql: true });
  db = await createPgDatabase('pg_laravel_worker');
  // Laravel 8's migrations for the database queue and failed jobs, as they run on PostgreSQL.
  await db.sql.query(`
    CREATE TABLE jobs (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload text NOT NULL,
      attempts smallint NOT NULL, reserved_at integer NULL, available_at integer NOT NULL, created_at integer NOT NULL);
    CREATE INDEX jobs_queue_index ON jobs (queue);
    CREATE TABLE failed_jobs (id bigserial PRIMARY KEY, uuid varchar(255) NOT NULL UNIQUE, connection text NOT NULL,
      queue text NOT NULL, payload text NOT NULL, exception text NOT NULL,
      failed_at timestamp(0) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL);
    CREATE TABLE effects (id bigserial PRIMARY KEY, job_id varchar(64) NOT NULL, label varchar(64) NOT NULL,
      queue varchar(191) NOT NULL, attempts integer NOT NULL);
    CREATE TABLE failing (label varchar(64) PRIMARY KEY);`);
  target = {
    redisDb: 0,
    prefix: 'unused_',
    retryAfter: 90,
    pgsql: { database: db.name },
    failing: true,
  };
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-pg-laravel-worker-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${db.dsn}`,
      'sources:',
      '  failed:',
      '    profile: laravel-failed-jobs',
      '    default: true',
      '    queue:',
      '      connections:',
      '        database: { driver: database, table: jobs }',
      '',
    ].join('\n'),
  );
  const init = await runCli(['init', '--audit-only'], { cwd });
  expect(init.code, init.stderr).toBe(0);
}, 1_500_000);

afterAll(async () => {
  await db?.drop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("Laravel's own worker on a PostgreSQL jobs table", () => {
  it('fails jobs whose service is down into failed_jobs; re-running the worker runs nothing', async () => {
    for (const label of FAILING) await db.sql.query('INSERT INTO failing (label) VALUES ($1)', [label]);
    const ids = await laravelDispatch(target, { queue: QUEUE, connection: 'database', ready: JOBS });
    expect(ids.ready).toHaveLength(JOBS);
    expect((await db.rows('SELECT id FROM jobs')).length).toBe(JOBS);

    const run = await laravelWork(target, { queue: QUEUE, connection: 'database', tries: 3 });
    // EffectJob's $tries (3): each failing job is released twice, then failed on its third attempt.
    expect(run, run.stderr).toMatchObject({ processed: 1, failed: FAILING.length, status: 0 });
    expect(await runsPerLabel()).toEqual({ 'ready-3': 1 });
    expect(await db.rows('SELECT id FROM jobs')).toEqual([]);
    const failed = await db.rows<{ connection: string; queue: string; payload: string; exception: string }>(
      'SELECT connection, queue, payload, exception FROM failed_jobs ORDER BY id',
    );
    expect(failed).toHaveLength(FAILING.length);
    for (const row of failed) {
      expect(row).toMatchObject({ connection: 'database', queue: QUEUE });
      expect(JSON.parse(row.payload)).toMatchObject({ displayName: 'EffectJob' });
      expect(row.exception).toMatch(/the service of ready-\d is down/);
    }

    // The negative control: nothing was pushed back, so the worker finds nothing to run.
    const idle = await laravelWork(target, { queue: QUEUE, connection: 'database' });
    expect(idle).toMatchObject({ processed: 0, failed: 0 });
    expect(await runsPerLabel()).toEqual({ 'ready-3': 1 });
    expect((await db.rows('SELECT id FROM failed_jobs')).length).toBe(FAILING.length);
  }, 120_000);

  it('what compensate --action retry pushes into the jobs table, Laravel runs exactly once', async () => {
    // The service is back.
    await db.sql.query('DELETE FROM failing');
    const failedIds = (await db.rows<{ id: string }>('SELECT id FROM failed_jobs ORDER BY id')).map((r) =>
      Number(r.id),
    );
    const { code, json, stderr } = await runJson<CompensateJson>(
      ['compensate', '--action', 'retry', '--reason', 'the coupon service is back', '--yes'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json.results).toEqual(
      failedIds.map((id) => ({ id, from: 'failed', to: 'pending', outcome: 'applied' })),
    );
    expect(await db.rows('SELECT id FROM failed_jobs')).toEqual([]);
    const pushed = await db.rows<{ queue: string; attempts: number; reserved_at: null }>(
      'SELECT queue, attempts, reserved_at FROM jobs ORDER BY id',
    );
    expect(pushed).toEqual(FAILING.map(() => ({ queue: QUEUE, attempts: 0, reserved_at: null })));

    const run = await laravelWork(target, { queue: QUEUE, connection: 'database' });
    expect(run, run.stderr).toMatchObject({ processed: FAILING.length, failed: 0, status: 0 });
    expect(await runsPerLabel()).toEqual({ 'ready-0': 1, 'ready-1': 1, 'ready-2': 1, 'ready-3': 1 });
    // First attempts of the pushed jobs: the retry reset them.
    const attempts = await db.rows<{ attempts: number }>(
      `SELECT attempts FROM effects WHERE label <> 'ready-3' ORDER BY id`,
    );
    expect(attempts).toEqual(FAILING.map(() => ({ attempts: 1 })));
    expect(await db.rows('SELECT id FROM jobs')).toEqual([]);

    // Nothing runs twice: the queue is empty and a second retry finds no failed job.
    const again = await laravelWork(target, { queue: QUEUE, connection: 'database' });
    expect(again).toMatchObject({ processed: 0, failed: 0 });
    const none = await runJson<CompensateJson>(['compensate', '--action', 'retry', '--yes'], { cwd });
    expect(none.json).toMatchObject({ matched: 0, applied: 0 });
    expect(await db.rows('SELECT id FROM jobs')).toEqual([]);
    expect(await runsPerLabel()).toEqual({ 'ready-0': 1, 'ready-1': 1, 'ready-2': 1, 'ready-3': 1 });
  }, 120_000);
});
