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
 * pg-boss's own worker (`boss.work`) on its own schema: jobs whose handler fails on their first
 * attempt end `failed` (retryLimit 0); `scan` counts them as SQL does; `compensate --action retry`
 * sends them back through pg-boss's own client, and the worker runs each exactly once. The pg-boss
 * is the one installed beside taskrecon (10.x on Node 20, 12.x on the Node 22/24 runs of
 * .ci/node-versions, which sets TASKRECON_EXPECT_PGBOSS and TASKRECON_EXPECT_NODE); the test's name
 * says which, and the CLI drives the same one.
 */

const require = createRequire(import.meta.url);
const PGBOSS_VERSION = (
  JSON.parse(readFileSync(require.resolve('pg-boss/package.json'), 'utf8')) as { version: string }
).version;
const expectedPgBoss = process.env.TASKRECON_EXPECT_PGBOSS;
const expectedNode = process.env.TASKRECON_EXPECT_NODE;

/** The part of pg-boss's client this test drives (10.x and 12.x alike). */
interface Job {
  id: string;
  data: { fail?: boolean } | null;
}
interface Boss {
  on(event: 'error', listener: (error: unknown) => void): unknown;
  start(): Promise<unknown>;
  stop(options?: Record<string, unknown>): Promise<void>;
  createQueue(name: string, options?: Record<string, unknown>): Promise<void>;
  send(name: string, data: object, options?: Record<string, unknown>): Promise<string | null>;
  fetch(name: string): Promise<unknown>;
  cancel(name: string, id: string): Promise<unknown>;
  work(
    name: string,
    options: Record<string, unknown>,
    handler: (jobs: Job[]) => Promise<void>,
  ): Promise<string>;
}
type BossClass = new (options: Record<string, unknown>) => Boss;

const FAILING = { payments: 5, emails: 3 };
const SUCCEEDING = 4;
const POLL_SECONDS = 0.5;

let db: PgTestDatabase;
/** The handlers' own connections (the workers of two queues run at once). */
let handlerPool: Pool;
let boss: Boss;
let cwd: string;
const bossErrors: unknown[] = [];

/** Every job's state and retry bookkeeping: what "nothing else changed" compares. */
async function jobRows() {
  return db.rows<{ id: string; name: string; state: string; retry_count: number; retry_limit: number }>(
    'SELECT id, name, state::text AS state, retry_count, retry_limit FROM pgboss.job ORDER BY id',
  );
}

async function effectsPerJob(): Promise<Record<string, number>> {
  const rows = await db.rows<{ job_id: string; n: string }>(
    'SELECT job_id, COUNT(*) AS n FROM effects GROUP BY job_id ORDER BY job_id',
  );
  return Object.fromEntries(rows.map((r) => [r.job_id, Number(r.n)]));
}

async function stateCounts(): Promise<Record<string, number>> {
  const rows = await db.rows<{ state: string; n: string }>(
    'SELECT state::text AS state, COUNT(*) AS n FROM pgboss.job GROUP BY state',
  );
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

async function until(what: string, done: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  db = await createPgDatabase('pgboss');
  await db.sql.query(
    'CREATE TABLE effects (job_id uuid NOT NULL, queue text NOT NULL, ok boolean NOT NULL, at timestamptz NOT NULL DEFAULT now())',
  );
  handlerPool = new pg.Pool({ connectionString: db.dsn, max: 2 });
  const mod = (await import('pg-boss')) as unknown as { default?: unknown; PgBoss?: unknown };
  const PgBoss = (mod.PgBoss ?? mod.default) as BossClass;
  // No maintenance timers: pg-boss's own expiry would fail the stuck job this test looks at.
  boss = new PgBoss({ connectionString: db.dsn, supervise: false, schedule: false });
  boss.on('error', (error) => bossErrors.push(error));
  await boss.start();
  // 12.x: `partition: true` gives a queue a table of its own (10.x gives every queue one); the rest
  // share pg-boss's common partition. Either way the parent pgboss.job reads them all.
  await boss.createQueue('payments', { retryLimit: 0, partition: true });
  await boss.createQueue('emails', { retryLimit: 0 });
  await boss.createQueue('reports', { retryLimit: 0 });
  await boss.createQueue('slow', { retryLimit: 0 });

  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-pgboss-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [`db: ${db.dsn}`, 'sources:', '  jobs:', '    profile: pg-boss', '    default: true', ''].join('\n'),
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

interface ScanJson {
  source: {
    profile: string;
    table: string;
    system?: { name: string; schemaVersion: number | null; partitioned: boolean };
  };
  summary: { total: number; byStatus: Record<string, number>; stuck: number | null };
  byBizType: Array<{ bizType: string; byStatus: Record<string, number>; stuck: number | null }>;
  stuck: Array<{ id: string; bizType: string }>;
  failed: Array<{ id: string; bizType: string; status: string; lastError: string | null }>;
}
interface CompensateJson {
  client?: string;
  matched: number;
  applied: number;
  dryRun: boolean;
  results: Array<{ id: string; from: string; to: string; outcome: string }>;
}

describe(`pg-boss ${PGBOSS_VERSION} on Node ${process.version}`, () => {
  let failedIds: string[] = [];
  let succeededIds: string[] = [];
  let pendingId: string;
  let cancelledId: string;
  let stuckId: string;
  const queueOf = new Map<string, string>();

  if (expectedPgBoss !== undefined)
    it(`is the pg-boss CI asked for (${expectedPgBoss})`, () => expect(PGBOSS_VERSION).toBe(expectedPgBoss));
  if (expectedNode !== undefined)
    it(`is the Node CI asked for (v${expectedNode})`, () => expect(process.version).toBe(`v${expectedNode}`));

  it("pg-boss's own worker fails the jobs whose handler throws", async () => {
    process.stderr.write(`pg-boss ${PGBOSS_VERSION} on Node ${process.version}\n`);
    for (const [queue, n] of Object.entries(FAILING))
      for (let i = 0; i < n; i++) {
        const id = (await boss.send(queue, { fail: true, i })) as string;
        failedIds.push(id);
        queueOf.set(id, queue);
      }
    for (let i = 0; i < SUCCEEDING; i++) succeededIds.push((await boss.send('payments', { i })) as string);
    // Beside them, jobs no worker takes: one waiting, one cancelled, one active past its expiry.
    pendingId = (await boss.send('reports', { waiting: true })) as string;
    cancelledId = (await boss.send('reports', { cancelled: true })) as string;
    await boss.cancel('reports', cancelledId);
    stuckId = (await boss.send('slow', { hangs: true }, { expireInSeconds: 1 })) as string;
    await boss.fetch('slow');

    // The handler fails a job's first run when its data says so, and records every run.
    for (const queue of Object.keys(FAILING)) {
      await boss.work(queue, { pollingIntervalSeconds: POLL_SECONDS }, async (jobs) => {
        for (const job of jobs) {
          const runs = await handlerPool.query('SELECT 1 FROM effects WHERE job_id = $1', [job.id]);
          const fail = job.data?.fail === true && runs.rows.length === 0;
          await handlerPool.query('INSERT INTO effects (job_id, queue, ok) VALUES ($1, $2, $3)', [
            job.id,
            queue,
            !fail,
          ]);
          if (fail) throw new Error(`the ${queue} service is down (job ${job.id})`);
        }
      });
    }
    failedIds = failedIds.sort();
    succeededIds = succeededIds.sort();
    await until('the workers to settle every job', async () => {
      const counts = await stateCounts();
      return counts.failed === failedIds.length && counts.completed === SUCCEEDING;
    });
    expect(await stateCounts()).toEqual({
      failed: failedIds.length,
      completed: SUCCEEDING,
      created: 1,
      cancelled: 1,
      active: 1,
    });
    const effects = await effectsPerJob();
    for (const id of [...failedIds, ...succeededIds]) expect(effects[id], id).toBe(1);
    // Let the stuck job's expiry (1 s, counted in whole seconds) pass.
    await until('the slow job to pass its expiry', async () => {
      const rows = await db.rows(
        "SELECT 1 FROM pgboss.job WHERE state = 'active' AND started_on < now() - interval '2 seconds'",
      );
      return rows.length === 1;
    });
  }, 60_000);

  it('scan counts every state as SQL does, through the parent table of every partition', async () => {
    const truth = await stateCounts();
    const partitions = await db.rows<{ n: string }>(
      "SELECT COUNT(*) AS n FROM pg_inherits WHERE inhparent = 'pgboss.job'::regclass",
    );
    expect(Number(partitions[0]?.n)).toBeGreaterThanOrEqual(2);

    const { code, json, stderr } = await runJson<ScanJson>(['scan', '--limit', '0'], { cwd });
    expect(code, stderr).toBe(0);
    expect(json.source).toMatchObject({ profile: 'pg-boss', table: 'pgboss.job' });
    expect(json.source.system).toMatchObject({ name: 'pg-boss', partitioned: true });
    const [version] = await db.rows<{ version: number }>('SELECT version FROM pgboss.version');
    expect(json.source.system?.schemaVersion).toBe(Number(version?.version));
    const total = Object.values(truth).reduce((a, b) => a + b, 0);
    expect(json.summary).toMatchObject({
      total,
      byStatus: {
        pending: truth.created,
        processing: truth.active,
        success: truth.completed,
        failed: truth.failed,
        compensated: truth.cancelled,
      },
      stuck: 1,
    });
    expect(json.failed.map((t) => t.id).sort()).toEqual(failedIds);
    for (const task of json.failed) {
      expect(task.status).toBe('failed');
      expect(task.lastError).toMatch(new RegExp(`the ${task.bizType} service is down`));
    }
    expect(json.stuck.map((t) => t.id)).toEqual([stuckId]);
    expect(json.byBizType.find((b) => b.bizType === 'payments')?.byStatus.failed).toBe(FAILING.payments);
    expect(json.byBizType.find((b) => b.bizType === 'emails')?.byStatus.failed).toBe(FAILING.emails);
    assertMatchesSchema('scan', json);

    // Stuck is measured from each job's own expiry: an hour's grace past it holds nothing.
    const grace = await runJson<ScanJson>(['scan', '--stuck-after', '1h'], { cwd });
    expect(grace.code, grace.stderr).toBe(0);
    expect(grace.json.summary.stuck).toBe(0);
  }, 60_000);

  it("doctor checks the table and leaves pg-boss's own indexes to pg-boss", async () => {
    const { code, json, stderr } = await runJson<{
      checks: Array<{ name: string; status: string; message: string }>;
    }>(['doctor'], { cwd });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('doctor', json);
    const byName = new Map(json.checks.map((c) => [c.name, c]));
    expect(byName.get('columns')?.status).toBe('ok');
    expect(byName.get('status values')?.status).toBe('ok');
    expect(byName.get('scan index')).toMatchObject({
      status: 'ok',
      message: expect.stringMatching(/^pg-boss owns pgboss\.job/),
    });
    expect(byName.has('event id unique')).toBe(false);
    expect(json.checks.filter((c) => c.status === 'fail')).toEqual([]);
  }, 60_000);

  it('show and report read pg-boss jobs', async () => {
    const id = failedIds[0] as string;
    const show = await runJson<{ task: { id: string; bizType: string; status: string; payload: unknown } }>(
      ['show', id],
      { cwd },
    );
    expect(show.code, show.stderr).toBe(0);
    expect(show.json.task).toMatchObject({
      id,
      status: 'failed',
      rawStatus: 'failed',
      bizType: queueOf.get(id),
    });
    expect(show.json.task.payload).toMatchObject({ fail: true });

    assertMatchesSchema('show', show.json);

    // Failed jobs breach the default thresholds: CRITICAL, exit 2, as Nagios expects.
    const report = await runJson<{ status: string; metrics: Record<string, number | null> }>(
      ['report', '--window', '1h'],
      { cwd },
    );
    expect(report.code, report.stderr).toBe(2);
    assertMatchesSchema('report', report.json);
    process.stderr.write(`${JSON.stringify(report.json.metrics)}\n`);
    expect(report.json.metrics).toMatchObject({
      created: 15,
      succeeded: SUCCEEDING,
      failed: failedIds.length,
      stuck: 1,
      due: 1,
    });
  }, 60_000);

  it('a dry run writes nothing, and with nothing sent back the worker runs nothing', async () => {
    const before = await jobRows();
    const effects = await effectsPerJob();
    const { code, json, stderr } = await runJson<CompensateJson>(
      ['compensate', '--action', 'retry', '--dry-run'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    assertMatchesSchema('compensate', json);
    expect(json).toMatchObject({ dryRun: true, matched: failedIds.length, applied: 0 });
    // A dry run never loads pg-boss's client.
    expect(json.client).toBeUndefined();
    expect(json.results.map((r) => r.outcome)).toEqual(failedIds.map(() => 'would-apply'));
    // Four polls of the workers.
    await sleep(POLL_SECONDS * 4 * 1000);
    expect(await jobRows()).toEqual(before);
    expect(await effectsPerJob()).toEqual(effects);
    expect(await db.rows('SELECT 1 FROM taskrecon_audit')).toEqual([]);
  }, 60_000);

  it('compensate --action retry sends failed jobs back through pg-boss; its worker runs each exactly once', async () => {
    const before = new Map((await jobRows()).map((r) => [r.id, r]));
    const { code, json, stderr } = await runJson<CompensateJson>(
      ['compensate', '--action', 'retry', '--reason', 'the services are back', '--yes'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json).toMatchObject({ dryRun: false, matched: failedIds.length, applied: failedIds.length });
    // The CLI wrote through the same pg-boss as this test's worker, at the database's schema version.
    const [schema] = await db.rows<{ version: number }>('SELECT version FROM pgboss.version');
    expect(json.client).toBe(`pg-boss ${PGBOSS_VERSION} (schema ${schema?.version})`);
    assertMatchesSchema('compensate', json);
    expect(json.results.map((r) => r.id).sort()).toEqual(failedIds);
    for (const r of json.results)
      expect(r).toMatchObject({ from: 'failed', to: 'pending', outcome: 'applied' });

    await until(
      'the workers to run the retried jobs',
      async () => (await stateCounts()).completed === SUCCEEDING + failedIds.length,
    );
    await sleep(POLL_SECONDS * 4 * 1000);
    const effects = await effectsPerJob();
    // One failed run before, exactly one good run after the retry; the others ran once.
    for (const id of failedIds) expect(effects[id], id).toBe(2);
    for (const id of succeededIds) expect(effects[id], id).toBe(1);
    const good = await db.rows<{ job_id: string }>('SELECT job_id FROM effects WHERE ok ORDER BY job_id');
    expect(good.map((r) => r.job_id).filter((id) => failedIds.includes(id))).toEqual(failedIds);

    const after = await jobRows();
    for (const row of after) {
      const was = before.get(row.id);
      if (failedIds.includes(row.id)) {
        // pg-boss's retry allows one more attempt; its worker counted it.
        expect(row).toMatchObject({
          state: 'completed',
          retry_limit: (was?.retry_limit ?? 0) + 1,
          retry_count: 1,
        });
      } else expect(row, row.id).toEqual(was);
    }
    expect(after.find((r) => r.id === pendingId)?.state).toBe('created');
    expect(after.find((r) => r.id === cancelledId)?.state).toBe('cancelled');
    expect(after.find((r) => r.id === stuckId)?.state).toBe('active');

    const audit = await db.rows<{
      task_id: string;
      event_id: string;
      action: string;
      from_status: string;
      to_status: string;
    }>('SELECT task_id, event_id, action, from_status, to_status FROM taskrecon_audit ORDER BY task_id');
    expect(audit).toEqual(
      failedIds.map((id) => ({
        task_id: id,
        event_id: id,
        action: 'retry',
        from_status: 'failed',
        to_status: 'pending',
      })),
    );

    // Run again: nothing is failed any more, so nothing is sent back and nothing runs.
    const again = await runJson<CompensateJson>(['compensate', '--action', 'retry', '--yes'], { cwd });
    expect(again.code, again.stderr).toBe(0);
    expect(again.json).toMatchObject({ matched: 0, applied: 0 });
    await sleep(POLL_SECONDS * 4 * 1000);
    expect(await effectsPerJob()).toEqual(effects);
    expect(bossErrors).toEqual([]);
  }, 90_000);

  it('bad ids are refused with exit 3 and nothing written', async () => {
    const before = await jobRows();
    const show = await runJson<{ error: { message: string } }>(['show', 'job-1'], { cwd });
    expect(show.code).toBe(3);
    expect(show.json.error.message).toMatch(/'job-1' is not a task id: pgboss\.job\.id holds uuids/);
    const bad = await runJson<{ error: { message: string } }>(
      ['compensate', '42', '--action', 'retry', '--yes'],
      {
        cwd,
      },
    );
    expect(bad.code).toBe(3);
    const unknown = '00000000-0000-4000-8000-000000000000';
    const missing = await runJson<{ error: { message: string } }>(
      ['compensate', unknown, '--action', 'retry', '--yes'],
      { cwd },
    );
    expect(missing.code).toBe(3);
    expect(missing.json.error.message).toMatch(`unknown task id ${unknown}`);
    expect(await jobRows()).toEqual(before);
  }, 60_000);

  it("refuses to write a database whose pg-boss schema is not the installed client's", async () => {
    const id = (await boss.send('emails', { fail: true, schema: true })) as string;
    await until('the worker to fail it', async () => {
      const rows = await db.rows("SELECT 1 FROM pgboss.job WHERE id = $1 AND state = 'failed'", [id]);
      return rows.length === 1;
    });
    const before = await jobRows();
    // As a database migrated by a newer pg-boss than the one beside taskrecon would record it.
    const [was] = await db.rows<{ version: number }>('SELECT version FROM pgboss.version');
    await db.sql.query('UPDATE pgboss.version SET version = version + 1');
    try {
      const newer = await runJson<{ error: { message: string; hint?: string } }>(
        ['compensate', id, '--action', 'retry', '--yes'],
        { cwd },
      );
      expect(newer.code).toBe(3);
      expect(newer.json.error.message).toBe(
        `pg-boss ${PGBOSS_VERSION} (schema ${was?.version}) cannot write this database's pg-boss jobs: pgboss.version records schema ${Number(was?.version) + 1}`,
      );
    } finally {
      await db.sql.query('UPDATE pgboss.version SET version = $1', [was?.version]);
    }
    expect(await jobRows()).toEqual(before);
    expect(await db.rows('SELECT 1 FROM taskrecon_audit WHERE task_id = $1', [id])).toEqual([]);
    // With the versions agreeing again it goes through, and the worker runs it once more.
    const retried = await runJson<CompensateJson>(['compensate', id, '--action', 'retry', '--yes'], { cwd });
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.json.applied).toBe(1);
    await until('the worker to run it', async () => {
      const rows = await db.rows("SELECT 1 FROM pgboss.job WHERE id = $1 AND state = 'completed'", [id]);
      return rows.length === 1;
    });
    expect((await effectsPerJob())[id]).toBe(2);
  }, 60_000);

  it('forget deletes a failed job through pg-boss, audited whole; mark-compensated is refused', async () => {
    const id = (await boss.send('emails', { fail: true, forget: true })) as string;
    await until('the worker to fail it', async () => {
      const rows = await db.rows("SELECT 1 FROM pgboss.job WHERE id = $1 AND state = 'failed'", [id]);
      return rows.length === 1;
    });
    const refused = await runJson<{ error: { message: string } }>(
      ['compensate', id, '--action', 'mark-compensated', '--yes'],
      { cwd },
    );
    expect(refused.code).toBe(3);
    expect(refused.json.error.message).toMatch(/use --action retry or --action forget/);
    expect(await db.rows("SELECT 1 FROM pgboss.job WHERE id = $1 AND state = 'failed'", [id])).toHaveLength(
      1,
    );

    const { code, json, stderr } = await runJson<CompensateJson>(
      ['compensate', id, '--action', 'forget', '--reason', 'sent by hand', '--yes'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json.results).toEqual([{ id, from: 'failed', to: 'deleted', outcome: 'applied' }]);
    expect(await db.rows('SELECT 1 FROM pgboss.job WHERE id = $1', [id])).toEqual([]);
    const [audit] = await db.rows<{ action: string; before_json: string }>(
      'SELECT action, before_json FROM taskrecon_audit WHERE task_id = $1',
      [id],
    );
    expect(audit?.action).toBe('forget');
    expect(JSON.parse(audit?.before_json ?? '{}')).toMatchObject({ id, name: 'emails', state: 'failed' });
    await sleep(POLL_SECONDS * 4 * 1000);
    expect((await effectsPerJob())[id]).toBe(1);
  }, 60_000);

  // 12.x keeps a heartbeat per job (heartbeat_on, heartbeat_seconds; at least 10 s); 10.x has none.
  it.runIf(Number(PGBOSS_VERSION.split('.')[0]) >= 12)(
    'a job whose heartbeat stopped is stuck long before its expiry',
    async () => {
      const id = (await boss.send(
        'slow',
        { beats: true },
        { heartbeatSeconds: 10, expireInSeconds: 3600 },
      )) as string;
      await boss.fetch('slow');
      const lost = () =>
        db.rows<{ id: string }>(
          `SELECT id FROM pgboss.job WHERE state = 'active' AND heartbeat_seconds IS NOT NULL
              AND heartbeat_on + heartbeat_seconds * interval '1 second' < now() - interval '1 second'`,
        );
      await until('its heartbeat to run out', async () => (await lost()).length === 1, 20_000);
      expect((await lost()).map((r) => r.id)).toEqual([id]);

      const { code, json, stderr } = await runJson<ScanJson>(['scan'], { cwd });
      expect(code, stderr).toBe(0);
      expect(json.stuck.map((t) => t.id).sort()).toEqual([id, stuckId].sort());
      const grace = await runJson<ScanJson>(['scan', '--stuck-after', '1h'], { cwd });
      expect(grace.json.summary.stuck).toBe(0);
    },
    40_000,
  );
});
