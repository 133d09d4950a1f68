import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { frameworkTableDdl } from '../support/framework-tables.js';
import { assertMatchesSchema } from '../support/schemas.js';

interface TaskJson {
  id: number;
  bizType: string | null;
  status: string;
  lastError: string | null;
  queue?: string | null;
}
interface ScanJson {
  summary: { total: number; byStatus: Record<string, number>; stuck: number | null; orphans?: number };
  stuck: TaskJson[];
  failed: TaskJson[];
  orphans?: TaskJson[];
}

type Row = Record<string, unknown>;

const EXECUTIONS = ['ready', 'scheduled', 'blocked', 'claimed', 'failed'].map(
  (e) => `solid_queue_${e}_executions`,
);

describe.each(TEST_ENGINES)('solid-queue profile (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;
  const held = (table: string) => `EXISTS (SELECT 1 FROM ${table} e WHERE e.job_id = j.id)`;

  /** Every row of every Solid Queue table, as SQL returns it (times as epoch seconds). */
  async function snapshot(): Promise<Record<string, Row[]>> {
    const out: Record<string, Row[]> = {};
    out.jobs = await db.rows(
      `SELECT id, queue_name, class_name, arguments, priority, active_job_id, ${db.epoch('scheduled_at')} AS scheduled_at,
              ${db.epoch('finished_at')} AS finished_at, concurrency_key, ${db.epoch('created_at')} AS created_at,
              ${db.epoch('updated_at')} AS updated_at, batch_id FROM solid_queue_jobs ORDER BY id`,
    );
    for (const t of EXECUTIONS) out[t] = await db.rows(`SELECT * FROM ${t} ORDER BY id`);
    out.processes = await db.rows('SELECT * FROM solid_queue_processes ORDER BY id');
    return out;
  }

  beforeAll(async () => {
    db = await createEngineDb(engine, 'solid_queue');
    for (const statement of frameworkTableDdl(engine, 'solid_queue')) await db.run(statement);
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-solidq-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nappTimeZone: UTC\nsources:\n  jobs: { profile: solid-queue, default: true }\n  wrong: { profile: solid-queue, table: solid_queue_ready_executions }\n`,
    );
    const init = await runCli(['init', '--audit-only'], { cwd });
    expect(init.code, init.stderr).toBe(0);
    const job = (id: number, cls: string, queue: string, priority: number, finished: boolean) =>
      `(${id}, '${queue}', '${cls}', '{"job_class":"${cls}","executions":${id % 3}}', ${priority}, 'aj-${id}',
        ${db.at(-600)}, ${finished ? db.at(-30) : 'NULL'}, ${db.at(-600)}, ${db.at(-30)})`;
    await db.run(`INSERT INTO solid_queue_jobs (id, queue_name, class_name, arguments, priority, active_job_id,
        scheduled_at, finished_at, created_at, updated_at) VALUES
      ${[
        job(1, 'MailJob', 'default', 0, false),
        job(2, 'MailJob', 'default', 0, false),
        job(3, 'ReportJob', 'low', 5, false),
        job(4, 'ChargeJob', 'default', 0, false),
        job(5, 'ChargeJob', 'default', 0, false),
        job(6, 'ChargeJob', 'critical', 1, false),
        job(7, 'MailJob', 'default', 0, false),
        job(8, 'ChargeJob', 'critical', 3, false),
        job(9, 'MailJob', 'default', 0, false),
        job(10, 'MailJob', 'default', 0, true),
        job(11, 'ReportJob', 'low', 0, false),
      ].join(', ')}`);
    await db.run(`INSERT INTO solid_queue_processes (id, kind, last_heartbeat_at, pid, hostname, created_at, name) VALUES
      (1, 'Worker', ${db.at(-10)}, 100, 'live', ${db.at(-3600)}, 'worker-live'),
      (2, 'Worker', ${db.at(-900)}, 200, 'dead', ${db.at(-3600)}, 'worker-dead')`);
    await db.run(`INSERT INTO solid_queue_ready_executions (job_id, queue_name, priority, created_at) VALUES
      (1, 'default', 0, ${db.at(-60)}), (2, 'default', 0, ${db.at(-60)})`);
    await db.run(`INSERT INTO solid_queue_scheduled_executions (job_id, queue_name, priority, scheduled_at, created_at)
      VALUES (3, 'low', 5, ${db.at(3600)}, ${db.at(-60)})`);
    await db.run(`INSERT INTO solid_queue_blocked_executions (job_id, queue_name, priority, concurrency_key, expires_at, created_at)
      VALUES (4, 'default', 0, 'ChargeJob/1', ${db.at(600)}, ${db.at(-60)})`);
    // 5 held by a live worker; 6 by a worker silent for 15 minutes; 7 by a process that is gone.
    await db.run(`INSERT INTO solid_queue_claimed_executions (job_id, process_id, created_at) VALUES
      (5, 1, ${db.at(-120)}), (6, 2, ${db.at(-1200)}), (7, 42, ${db.at(-1200)})`);
    await db.run(`INSERT INTO solid_queue_failed_executions (job_id, error, created_at) VALUES
      (8, '{"exception_class":"Stripe::CardError","message":"card declined","backtrace":[]}', ${db.at(-300)}),
      (9, '{"exception_class":"Net::ReadTimeout","message":"smtp timeout","backtrace":[]}', ${db.at(-300)})`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('counts every state as SQL does, lists the stuck claims, the failed jobs and the orphans', async () => {
    const truth = (condition: string) =>
      db
        .rows<{ n: number }>(`SELECT ${db.countIf(condition)} AS n FROM solid_queue_jobs j`)
        .then((r) => r[0]?.n);
    const pendingSql = `j.finished_at IS NULL AND NOT ${held(EXECUTIONS[4] as string)} AND NOT ${held(EXECUTIONS[3] as string)} AND (${EXECUTIONS.slice(0, 3).map(held).join(' OR ')})`;
    const expected = {
      success: await truth('j.finished_at IS NOT NULL'),
      failed: await truth(`j.finished_at IS NULL AND ${held('solid_queue_failed_executions')}`),
      processing: await truth(
        `j.finished_at IS NULL AND ${held('solid_queue_claimed_executions')} AND NOT ${held('solid_queue_failed_executions')}`,
      ),
      pending: await truth(pendingSql),
      unknown: await truth(
        `j.finished_at IS NULL AND ${EXECUTIONS.map((t) => `NOT ${held(t)}`).join(' AND ')}`,
      ),
      compensated: 0,
    };
    expect(expected).toEqual({
      success: 1,
      failed: 2,
      processing: 3,
      pending: 4,
      unknown: 1,
      compensated: 0,
    });
    const { code, json, stderr } = await runJson<ScanJson>(['scan', '--source', 'jobs'], { cwd });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('scan', json);
    expect(json.summary.byStatus).toEqual(expected);
    expect(json.summary.total).toBe(11);
    expect(json.summary.stuck).toBe(2);
    expect(json.stuck.map((t) => t.id).sort()).toEqual([6, 7]);
    expect(json.failed.map((t) => [t.id, t.bizType])).toEqual([
      [8, 'ChargeJob'],
      [9, 'MailJob'],
    ]);
    expect(json.failed[0]?.lastError).toContain('card declined');
    expect(json.summary.orphans).toBe(1);
    expect(json.orphans?.map((t) => t.id)).toEqual([11]);
    const text = await runCli(['scan', '--source', 'jobs', '--no-color'], { cwd });
    expect(text.stdout).toMatch(/Orphans \(held by no execution, not finished\)\n[\s\S]*\b11\b/);
  });

  it('reports the stuck and the failed jobs', async () => {
    const report = await runJson<{ metrics: Record<string, unknown> }>(
      ['report', '--source', 'jobs', '--window', '1h'],
      {
        cwd,
      },
    );
    expect([0, 1, 2], report.stderr).toContain(report.code);
    assertMatchesSchema('report', report.json);
    expect(report.json.metrics).toMatchObject({ created: 11, stuck: 2, failedOpen: 2 });
  });

  it('holds a silent worker for as long as --stuck-after says', async () => {
    const { code, json } = await runJson<ScanJson>(['scan', '--source', 'jobs', '--stuck-after', '30m'], {
      cwd,
    });
    expect(code).toBe(0);
    // The process that is gone holds its job stuck whatever the grace.
    expect(json.stuck.map((t) => t.id)).toEqual([7]);
  });

  it('refuses a source pointed at the wrong table, writing nothing', async () => {
    const before = await snapshot();
    for (const args of [
      ['scan', '--source', 'wrong'],
      ['compensate', '8', '--source', 'wrong', '--action', 'retry', '--yes'],
    ]) {
      const result = await runCli(args, { cwd });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/solid_queue_ready_executions' has no column 'class_name'/);
    }
    // The job table alone is not enough: the state lives in the execution and process tables.
    await db.run('ALTER TABLE solid_queue_processes RENAME TO sq_processes_elsewhere');
    try {
      const result = await runCli(['compensate', '8', '--source', 'jobs', '--action', 'retry', '--yes'], {
        cwd,
      });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/table 'solid_queue_processes' does not exist/);
    } finally {
      await db.run('ALTER TABLE sq_processes_elsewhere RENAME TO solid_queue_processes');
    }
    expect(await snapshot()).toEqual(before);
    expect(await db.rows('SELECT COUNT(*) AS n FROM taskrecon_audit')).toEqual([{ n: 0 }]);
  });

  it('retries a failed job as FailedExecution#retry does: its failed execution becomes a ready one', async () => {
    const before = await snapshot();
    const dry = await runJson<{ applied: number }>(
      ['compensate', '8', '--source', 'jobs', '--action', 'retry', '--dry-run'],
      { cwd },
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(await snapshot()).toEqual(before);
    const nowEpoch = (await db.rows<{ n: number }>(`SELECT ${db.epoch('now')} AS n`))[0]?.n as number;
    const { code, json, stderr } = await runJson<{ applied: number }>(
      ['compensate', '8', '--source', 'jobs', '--action', 'retry', '--reason', 'card fixed', '--yes'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json.applied).toBe(1);
    const after = await snapshot();
    // The job row and every other table stay as they were, column by column.
    expect(after.jobs).toEqual(before.jobs);
    for (const t of [
      'solid_queue_scheduled_executions',
      'solid_queue_blocked_executions',
      'solid_queue_claimed_executions',
    ])
      expect(after[t]).toEqual(before[t]);
    expect(after.processes).toEqual(before.processes);
    expect(after.solid_queue_failed_executions).toEqual(
      before.solid_queue_failed_executions?.filter((r) => Number(r.job_id) !== 8),
    );
    const added = await db.rows<Row>(
      `SELECT job_id, queue_name, priority, ${db.epoch('created_at')} AS created FROM solid_queue_ready_executions WHERE job_id = 8`,
    );
    expect(added).toHaveLength(1);
    expect(Number(added[0]?.job_id)).toBe(8);
    expect(added[0]?.queue_name).toBe('critical');
    expect(Number(added[0]?.priority)).toBe(3);
    expect(Math.abs(Number(added[0]?.created) - nowEpoch)).toBeLessThan(30);
    expect(after.solid_queue_ready_executions).toHaveLength(
      (before.solid_queue_ready_executions?.length ?? 0) + 1,
    );
    const audit = await db.rows<Row>('SELECT task_id, from_status, to_status, reason FROM taskrecon_audit');
    expect(audit).toEqual([
      { task_id: '8', from_status: 'failed', to_status: 'pending', reason: 'card fixed' },
    ]);
    const scan = await runJson<ScanJson>(['scan', '--source', 'jobs'], { cwd });
    expect(scan.json.summary.byStatus.failed).toBe(1);
  });

  it('refuses to retry a job that is no longer failed, writing nothing', async () => {
    const before = await snapshot();
    const result = await runCli(['compensate', '8', '--source', 'jobs', '--action', 'retry', '--yes'], {
      cwd,
    });
    expect(result.code).toBe(3);
    expect(await snapshot()).toEqual(before);
    expect(await db.rows('SELECT COUNT(*) AS n FROM taskrecon_audit')).toEqual([{ n: 1 }]);
  });

  it('forgets a failed job as discarding it does: the job and its failed execution are deleted', async () => {
    const before = await snapshot();
    const { code, stderr } = await runJson(
      ['compensate', '9', '--source', 'jobs', '--action', 'forget', '--yes'],
      {
        cwd,
      },
    );
    expect(code, stderr).toBe(0);
    const after = await snapshot();
    expect(after.jobs).toEqual(before.jobs?.filter((r) => Number(r.id) !== 9));
    expect(after.solid_queue_failed_executions).toEqual([]);
    expect(after.solid_queue_ready_executions).toEqual(before.solid_queue_ready_executions);
    expect(await db.rows('SELECT COUNT(*) AS n FROM taskrecon_audit')).toEqual([{ n: 2 }]);
  });

  it('shows a retried job with its audit history, through --profile too', async () => {
    const { code, json, stderr } = await runJson<{ task: TaskJson; audit: Array<{ action: string }> }>(
      ['show', '8', '--profile', 'solid-queue', '--db', db.dsn],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json.task).toMatchObject({ id: 8, bizType: 'ChargeJob', status: 'pending', queue: 'critical' });
    expect(json.audit.map((h) => h.action)).toEqual(['retry']);
  });

  it('sweeps failed jobs by class and error, through the same retry', async () => {
    await db.run(`INSERT INTO solid_queue_jobs (id, queue_name, class_name, arguments, priority, active_job_id,
        created_at, updated_at) VALUES
      (12, 'critical', 'ChargeJob', '{}', 2, 'aj-12', ${db.at(-60)}, ${db.at(-60)}),
      (13, 'critical', 'ChargeJob', '{}', 2, 'aj-13', ${db.at(-60)}, ${db.at(-60)}),
      (14, 'default', 'MailJob', '{}', 0, 'aj-14', ${db.at(-60)}, ${db.at(-60)})`);
    await db.run(`INSERT INTO solid_queue_failed_executions (job_id, error, created_at) VALUES
      (12, '{"exception_class":"Stripe::CardError","message":"card declined"}', ${db.at(-30)}),
      (13, '{"exception_class":"Stripe::InvalidRequestError","message":"no such customer"}', ${db.at(-30)}),
      (14, '{"exception_class":"Stripe::CardError","message":"card declined"}', ${db.at(-30)})`);
    const sweepDir = mkdtempSync(join(tmpdir(), 'taskrecon-solidq-sweep-'));
    writeFileSync(
      join(sweepDir, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nappTimeZone: UTC\nsources:\n  jobs: { profile: solid-queue }\nsweeps:\n` +
        `  - { name: cards, match: { bizType: ChargeJob, errorLike: 'card declined' }, action: retry }\n`,
    );
    const { code, stderr } = await runJson(['sweep', '--source', 'jobs'], { cwd: sweepDir });
    expect(code, stderr).toBe(0);
    const failed = await db.rows<{ job_id: number }>(
      'SELECT job_id FROM solid_queue_failed_executions ORDER BY job_id',
    );
    expect(failed.map((r) => Number(r.job_id))).toEqual([13, 14]);
    const ready = await db.rows<Row>(
      'SELECT queue_name, priority FROM solid_queue_ready_executions WHERE job_id = 12',
    );
    expect(ready.map((r) => [r.queue_name, Number(r.priority)])).toEqual([['critical', 2]]);
  });
});
