import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { failedJobsConfig } from '../support/fixtures.js';
import { thinkphpFailedJobsDdl, thinkphpJobsDdl } from '../support/framework-tables.js';

/**
 * think-queue's failed jobs as its own worker leaves them (think-queue 3.x, json_encode'd payloads):
 * - a job pushed as an object runs through `think\queue\CallQueuedHandler@call`, its class in
 *   `data.commandName`: that class is the biz type (scan, --biz-type, sweep rules);
 * - the worker logs the failed payload before its last increment: attempts is the payload's + 1,
 *   what the worker counted;
 * - piped text prints class names with single backslashes (`app\job\…`);
 * - a manual retry audits the job's payload id as its event id, as the sweep does.
 */
const HANDLER = 'think\\queue\\CallQueuedHandler@call';
const SMS = 'app\\job\\SendPaidSmsJob';
const PLAIN = 'app\\job\\RefreshDailyReportJob';

function payload(job: string, data: object, attempts: number, id?: string): string {
  return JSON.stringify({ job, maxTries: 3, timeout: 60, data, ...(id ? { id } : {}), attempts }).replace(
    /\//g,
    '\\/',
  );
}

interface Task {
  id: number;
  bizType: string | null;
  eventId: string | null;
  attempts: number | null;
}

describe.each(TEST_ENGINES)('think-queue failed jobs as its worker counts them on %s', (engine) => {
  let db: EngineDb;
  let cwd: string;
  let objectJobId = 0;
  const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);

  beforeAll(async () => {
    db = await createEngineDb(engine, 'thinkphp_fidelity');
    for (const ddl of [...thinkphpFailedJobsDdl(engine), ...thinkphpJobsDdl(engine)]) await db.run(ddl);
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-tp-fidelity-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      failedJobsConfig(db.dsn, 'thinkphp-failed-jobs', ['database: { driver: database, table: jobs }']) +
        [
          'sweeps:',
          `  - { name: sms, match: { bizType: '${SMS}' }, action: retry }`,
          `  - { name: reports, match: { bizType: '${PLAIN}' }, action: hold }`,
          '',
        ].join('\n'),
    );
    expect((await runCli(['init', '--audit-only', '--profile', 'thinkphp-failed-jobs'], { cwd })).code).toBe(
      0,
    );
    const insert = (p: string, error: string) =>
      db.run('INSERT INTO failed_jobs (connection, queue, payload, exception) VALUES (?, ?, ?, ?)', [
        'database',
        'sms',
        p,
        error,
      ]);
    // Pushed as an object: Queue::push(new SendPaidSmsJob(…)); maxTries 3, failed on its third run.
    await insert(
      payload(
        HANDLER,
        { commandName: SMS, command: 'O:23:"app\\job\\SendPaidSmsJob":1:{s:5:"order";i:7;}' },
        2,
        'objjob1',
      ),
      'RuntimeException: sms gateway 502',
    );
    // Pushed by class name: Queue::push(RefreshDailyReportJob::class, data).
    await insert(payload(PLAIN, { day: 1 }, 0, 'plainjob1'), 'RuntimeException: report db gone');
    const [row] = await rows<{ id: number }>('SELECT id FROM failed_jobs WHERE payload LIKE ?', [
      '%objjob1%',
    ]);
    objectJobId = Number(row?.id);
  });

  afterAll(async () => {
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('takes the class of a job pushed as an object from data.commandName', async () => {
    const { code, json } = await runJson<{ failed: Task[] }>(['scan', '--status', 'failed'], { cwd });
    expect(code).toBe(0);
    expect(json.failed.map((t) => t.bizType).sort()).toEqual([SMS, PLAIN].sort());
    const only = await runJson<{ failed: Task[] }>(['scan', '--status', 'failed', '--biz-type', SMS], {
      cwd,
    });
    expect(only.json.failed.map((t) => t.id)).toEqual([objectJobId]);
    const sweep = await runJson<{ results: Array<{ id: number; rule: string; outcome: string }> }>(
      ['sweep', '--since', '1h', '--dry-run'],
      { cwd },
    );
    expect(sweep.json.results.filter((r) => r.rule === 'sms').map((r) => [r.id, r.outcome])).toEqual([
      [objectJobId, 'would-retry'],
    ]);
  });

  it('reports attempts as the worker counted them (the payload is logged before its last increment)', async () => {
    const { json } = await runJson<{ failed: Task[] }>(['scan', '--status', 'failed'], { cwd });
    const byType = Object.fromEntries(json.failed.map((t) => [t.bizType, t.attempts]));
    expect(byType).toEqual({ [SMS]: 3, [PLAIN]: 1 });
    const ndjson = await runCli(['scan', '--status', 'failed', '--limit', '0', '--format', 'ndjson'], {
      cwd,
    });
    expect(ndjson.code, ndjson.stderr).toBe(0);
    const lines = ndjson.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Task);
    expect(Object.fromEntries(lines.map((t) => [t.bizType, t.attempts]))).toEqual({ [SMS]: 3, [PLAIN]: 1 });
  });

  it('prints class names with single backslashes in piped scan and sweep text', async () => {
    const scan = await runCli(['scan', '--status', 'failed'], { cwd });
    expect(scan.code).toBe(0);
    expect(scan.stdout).toContain(SMS);
    expect(scan.stdout).not.toContain('app\\\\job');
    // The held job is listed with its class.
    const sweep = await runCli(['sweep', '--since', '1h', '--dry-run'], { cwd });
    expect(sweep.stdout).toContain(PLAIN);
    expect(sweep.stdout).not.toContain('app\\\\job');
  });

  it('audits a manual retry with the payload id as its event id, as the sweep does', async () => {
    const retry = await runJson(['compensate', String(objectJobId), '--action', 'retry', '--yes'], { cwd });
    expect(retry.code, retry.stderr).toBe(0);
    const audit = await rows<{ action: string; event_id: string | null }>(
      'SELECT action, event_id FROM taskrecon_audit',
    );
    expect(audit).toEqual([{ action: 'retry', event_id: 'objjob1' }]);
  });
});
