import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg, { type Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

/**
 * `sweep` on a pg-boss source: pg-boss's own worker fails jobs; a rule by queue (the biz type) and
 * error text retries exactly the failed jobs it matches through pg-boss's own client, audited
 * `sweep-retry`, and the worker completes each once. A job that fails again is a second failure,
 * never retried by a later sweep; a dry run writes nothing.
 */

const require = createRequire(import.meta.url);
const PGBOSS_VERSION = (
  JSON.parse(readFileSync(require.resolve('pg-boss/package.json'), 'utf8')) as { version: string }
).version;

interface Job {
  id: string;
  data: { error?: string; always?: boolean } | null;
}
interface Boss {
  on(event: 'error', listener: (error: unknown) => void): unknown;
  start(): Promise<unknown>;
  stop(options?: Record<string, unknown>): Promise<void>;
  createQueue(name: string, options?: Record<string, unknown>): Promise<void>;
  send(name: string, data: object): Promise<string | null>;
  work(
    name: string,
    options: Record<string, unknown>,
    handler: (jobs: Job[]) => Promise<void>,
  ): Promise<string>;
}
type BossClass = new (options: Record<string, unknown>) => Boss;

interface SweepJson {
  dryRun: boolean;
  matched: number;
  unmatched: number;
  retried: number;
  secondFailures: number;
  results: Array<{ id: string; bizType: string; rule: string; outcome: string }>;
}

const POLL_SECONDS = 0.5;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let db: PgTestDatabase;
let handlerPool: Pool;
let boss: Boss;
let cwd: string;
const bossErrors: unknown[] = [];

async function jobRows() {
  return db.rows<{ id: string; state: string; retry_count: number; retry_limit: number }>(
    'SELECT id, state::text AS state, retry_count, retry_limit FROM pgboss.job ORDER BY id',
  );
}
async function runsPerJob(): Promise<Record<string, number>> {
  const rows = await db.rows<{ job_id: string; n: string }>(
    'SELECT job_id, COUNT(*) AS n FROM runs GROUP BY job_id',
  );
  return Object.fromEntries(rows.map((r) => [r.job_id, Number(r.n)]));
}
async function stateOf(id: string): Promise<string | undefined> {
  const [row] = await db.rows<{ state: string }>(
    'SELECT state::text AS state FROM pgboss.job WHERE id = $1',
    [id],
  );
  return row?.state;
}
async function until(what: string, done: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  db = await createPgDatabase('pgboss_sweep');
  await db.sql.query('CREATE TABLE runs (job_id uuid NOT NULL, ok boolean NOT NULL)');
  handlerPool = new pg.Pool({ connectionString: db.dsn, max: 2 });
  const mod = (await import('pg-boss')) as unknown as { default?: unknown; PgBoss?: unknown };
  const PgBoss = (mod.PgBoss ?? mod.default) as BossClass;
  boss = new PgBoss({ connectionString: db.dsn, supervise: false, schedule: false });
  boss.on('error', (error) => bossErrors.push(error));
  await boss.start();
  await boss.createQueue('payments', { retryLimit: 0 });
  await boss.createQueue('emails', { retryLimit: 0 });
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-pgboss-sweep-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${db.dsn}`,
      'sources:',
      '  jobs: { profile: pg-boss, default: true }',
      'sweeps:',
      "  - { name: payments-down, match: { bizType: payments, errorLike: 'service is down' }, action: retry }",
      '',
    ].join('\n'),
  );
  const init = await runCli(['init', '--audit-only'], { cwd });
  expect(init.code, init.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await boss?.stop({ graceful: false, wait: true });
  await handlerPool?.end();
  await db?.drop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe(`sweep on pg-boss ${PGBOSS_VERSION}`, () => {
  /** Failed by the worker with "service is down" in payments: the rule's. */
  const matching: string[] = [];
  /** Fails on every run: retried once, then a second failure. */
  let always: string;
  /** Failed, but not the rule's: another error in payments, the same error in emails. */
  const others: string[] = [];

  it("pg-boss's own worker fails the jobs", async () => {
    for (let i = 0; i < 3; i++)
      matching.push((await boss.send('payments', { error: 'the payments service is down', i })) as string);
    always = (await boss.send('payments', { error: 'the payments service is down', always: true })) as string;
    others.push((await boss.send('payments', { error: 'card declined' })) as string);
    others.push((await boss.send('emails', { error: 'the mail service is down' })) as string);
    for (const queue of ['payments', 'emails'])
      await boss.work(queue, { pollingIntervalSeconds: POLL_SECONDS }, async (jobs) => {
        for (const job of jobs) {
          const before = await handlerPool.query('SELECT 1 FROM runs WHERE job_id = $1', [job.id]);
          const fail = Boolean(job.data?.error) && (before.rows.length === 0 || job.data?.always === true);
          await handlerPool.query('INSERT INTO runs (job_id, ok) VALUES ($1, $2)', [job.id, !fail]);
          if (fail) throw new Error(`${job.data?.error} (job ${job.id})`);
        }
      });
    await until('the worker to fail every job', async () => {
      const rows = await jobRows();
      return rows.length === 6 && rows.every((r) => r.state === 'failed');
    });
  }, 60_000);

  it('a dry run names the jobs the rule would retry and writes nothing', async () => {
    const before = await jobRows();
    const runs = await runsPerJob();
    const { code, json, stderr } = await runJson<SweepJson>(['sweep', '--since', '1h', '--dry-run'], { cwd });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('sweep', json);
    expect(json).toMatchObject({ dryRun: true, retried: 4, unmatched: 2 });
    expect(json.results.map((r) => r.id).sort()).toEqual([...matching, always].sort());
    expect(json.results.every((r) => r.outcome === 'would-retry')).toBe(true);
    await sleep(POLL_SECONDS * 4 * 1000);
    expect(await jobRows()).toEqual(before);
    expect(await runsPerJob()).toEqual(runs);
    expect(await db.rows('SELECT 1 FROM taskrecon_audit')).toEqual([]);
  }, 60_000);

  it('a sweep retries exactly the matching jobs through pg-boss; its worker completes each once', async () => {
    const before = new Map((await jobRows()).map((r) => [r.id, r]));
    const { code, json, stderr } = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('sweep', json);
    expect(json).toMatchObject({ dryRun: false, retried: 4, unmatched: 2, secondFailures: 0 });
    for (const r of json.results)
      expect(r).toMatchObject({ bizType: 'payments', rule: 'payments-down', outcome: 'retried' });

    await until('the worker to run the retried jobs', async () => {
      const runs = await runsPerJob();
      return [...matching, always].every((id) => runs[id] === 2);
    });
    await until('the always-failing job to fail again', async () => (await stateOf(always)) === 'failed');
    await sleep(POLL_SECONDS * 4 * 1000);
    const runs = await runsPerJob();
    for (const id of matching) {
      expect(runs[id], id).toBe(2);
      expect(await stateOf(id)).toBe('completed');
    }
    expect(runs[always]).toBe(2);
    // Not the rule's: untouched, not run again.
    for (const id of others) {
      expect(runs[id], id).toBe(1);
      expect((await jobRows()).find((r) => r.id === id)).toEqual(before.get(id));
    }
    const audit = await db.rows<{ task_id: string; event_id: string; action: string; reason: string }>(
      'SELECT task_id, event_id, action, reason FROM taskrecon_audit ORDER BY task_id',
    );
    // The after image is the row pg-boss's retry left: one more attempt allowed.
    const images = await db.rows<{ after_json: string }>('SELECT after_json FROM taskrecon_audit');
    for (const image of images)
      expect(JSON.parse(image.after_json)).toMatchObject({ state: 'retry', retry_limit: 1 });
    expect(audit).toEqual(
      [...matching, always].sort().map((id) => ({
        task_id: id,
        event_id: id,
        action: 'sweep-retry',
        reason: 'sweep rule payments-down',
      })),
    );
  }, 90_000);

  it('a second sweep retries nothing: the job that failed again is a second failure', async () => {
    const audits = await db.rows('SELECT 1 FROM taskrecon_audit');
    const runs = await runsPerJob();
    for (let i = 0; i < 2; i++) {
      const { code, json, stderr } = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
      // A second failure is a finding: exit 1.
      expect(code, stderr).toBe(1);
      expect(json).toMatchObject({ retried: 0, secondFailures: 1 });
      expect(json.results.map((r) => [r.id, r.outcome])).toEqual([[always, 'second-failure']]);
    }
    await sleep(POLL_SECONDS * 4 * 1000);
    expect(await db.rows('SELECT 1 FROM taskrecon_audit')).toHaveLength(audits.length);
    expect(await runsPerJob()).toEqual(runs);
    expect(bossErrors).toEqual([]);
  }, 60_000);
});
