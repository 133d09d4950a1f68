import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The app writes its times in +08:00 and the CLI runs in New York: times must not drift. On MySQL
// the DATETIME columns hold +08:00 wall-clock times; PostgreSQL's timestamptz and SQLite's UTC text
// must come out the same.
const APP_ZONE = '+08:00';
const NY = { TZ: 'America/New_York' };

interface CompensateJson {
  action: string;
  operator: string;
  dryRun: boolean;
  matched: number;
  applied: number;
  skipped: number;
  refused: number;
  runId: string;
  results: Array<{ id: number; from: string | null; to: string; outcome: string; reason?: string }>;
}

interface AuditRow {
  id: number;
  operator: string;
  host: string;
  action: string;
  source: string;
  task_id: string;
  event_id: string | null;
  from_status: string;
  to_status: string;
  before_json: string;
  after_json: string | null;
  reason: string | null;
  run_id: string;
  age: number;
}

interface AuditJson {
  count: number;
  entries: Array<{ at: string; action: string; reason: string | null; before: { status: number } }>;
}

describe.each(TEST_ENGINES)('compensate on the async-task profile (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;
  let strictCwd: string;

  const task = async (bizId: string) =>
    (
      await db.rows<Record<string, unknown>>(
        `SELECT *, ${db.epoch('now')} - ${db.epoch('updated_at')} AS idle, ${db.epoch('next_retry_time')} - ${db.epoch('now')} AS due_in FROM async_task WHERE biz_id = ?`,
        [bizId],
      )
    )[0];
  const idOf = async (bizId: string) => Number((await task(bizId))?.id);
  const auditOf = (taskId: number) =>
    db.rows<AuditRow>(
      `SELECT *, ${db.epoch('now')} - ${db.epoch('created_at')} AS age FROM taskrecon_audit WHERE task_id = ? ORDER BY id`,
      [String(taskId)],
    );
  const snapshot = async () =>
    JSON.stringify([
      await db.rows('SELECT * FROM async_task ORDER BY id'),
      await db.rows('SELECT COUNT(*) AS n FROM taskrecon_audit'),
    ]);

  beforeAll(async () => {
    db = await createEngineDb(engine, 'compensate_async', { timeZone: APP_ZONE });
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-compensate-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nappTimeZone: "${APP_ZONE}"\nsources:\n  tasks: { profile: async-task, default: true }\n`,
    );
    strictCwd = mkdtempSync(join(tmpdir(), 'taskrecon-compensate-strict-'));
    writeFileSync(
      join(strictCwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nappTimeZone: "${APP_ZONE}"\ncompensate: { requireReason: true }\nsources:\n  tasks: { profile: async-task, default: true }\n`,
    );
    const init = await runCli(['init', '--db', db.dsn]);
    expect(init.code, init.stderr).toBe(0);
    const day = 86_400;
    await db.run(`
      INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at) VALUES
      ('coupon', 'failed-1',  'ev-f1', '{"orderId": 1}', 3, 7, ${db.at(-day)}, 'HTTP 500 from coupon service', ${db.at(-2 * day)}, ${db.at(-day)}),
      ('coupon', 'failed-2',  'ev-f2', '{"orderId": 2}', 3, 7, ${db.at(-day)}, 'connect timeout', ${db.at(-2 * day)}, ${db.at(-day)}),
      ('sms',    'failed-3',  'ev-f3', '{"phone": "138"}', 3, 5, ${db.at(-day)}, 'connect timeout', ${db.at(-2 * day)}, ${db.at(-day)}),
      ('coupon', 'success-1', 'ev-s1', '{}', 2, 0, ${db.at(-day)}, NULL, ${db.at(-2 * day)}, ${db.at(-day)}),
      ('coupon', 'pending-1', 'ev-p1', '{}', 0, 2, ${db.at(3600)}, 'HTTP 503', ${db.at(-2 * day)}, ${db.at(-day)}),
      ('coupon', 'stuck-1',   'ev-k1', '{}', 1, 1, ${db.at(-3600)}, NULL, ${db.at(-2 * day)}, ${db.at(-day)}),
      ('refund', 'failed-4',  'ev-f4', '{"refund": 9}', 3, 7, ${db.at(-day)}, 'HTTP 400 bad account', ${db.at(-2 * day)}, ${db.at(-day)}),
      ('refund', 'failed-5',  'ev-f5', '{"refund": 10}', 3, 7, ${db.at(-day)}, 'HTTP 400 bad account', ${db.at(-2 * day)}, ${db.at(-day)})`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('marks a failed task compensated: guarded write, updated_at from the database, and its audit row', async () => {
    const id = await idOf('failed-1');
    const { code, json } = await runJson<CompensateJson>(
      [
        'compensate',
        String(id),
        '--action',
        'mark-compensated',
        '--reason',
        'coupon issued by hand',
        '--operator',
        'alice@ops',
        '--yes',
      ],
      { cwd, env: NY },
    );
    expect(code).toBe(0);
    assertMatchesSchema('compensate', json);
    expect(json).toMatchObject({
      action: 'mark-compensated',
      operator: 'alice@ops',
      dryRun: false,
      matched: 1,
      applied: 1,
      skipped: 0,
    });
    expect(json.results).toEqual([{ id, from: 'failed', to: 'compensated', outcome: 'applied' }]);
    const after = await task('failed-1');
    expect(after?.status).toBe(4);
    expect(Number(after?.idle)).toBeLessThan(30);
    const audit = await auditOf(id);
    expect(audit).toHaveLength(1);
    const entry = audit[0] as AuditRow;
    expect(entry).toMatchObject({
      operator: 'alice@ops',
      action: 'mark-compensated',
      source: 'tasks',
      event_id: 'ev-f1',
      from_status: 'failed',
      to_status: 'compensated',
      reason: 'coupon issued by hand',
      run_id: json.runId,
    });
    expect(JSON.parse(entry.before_json)).toMatchObject({ id, status: 3, retry_count: 7 });
    expect(JSON.parse(entry.after_json as string)).toMatchObject({ id, status: 4 });
    expect(Math.abs(entry.age)).toBeLessThan(30);
  });

  it('refuses mark-compensated on a success row: exit 3, nothing written, and says why', async () => {
    const before = await snapshot();
    const id = await idOf('success-1');
    const failedId = await idOf('failed-2');
    const { code, json, stderr } = await runJson<CompensateJson>(
      ['compensate', String(failedId), String(id), '--action', 'mark-compensated', '--yes'],
      { cwd, env: NY },
    );
    expect(code).toBe(3);
    assertMatchesSchema('compensate', json);
    expect(json.applied).toBe(0);
    expect(json.results.find((r) => r.id === id)).toMatchObject({ outcome: 'refused', from: 'success' });
    expect(json.results.find((r) => r.id === id)?.reason).toMatch(
      /from failed to compensated; this task is success/,
    );
    expect(stderr).toMatch(/nothing was changed/);
    expect(await snapshot()).toBe(before);
    const human = await runCli(['compensate', String(id), '--action', 'mark-compensated', '--yes'], { cwd });
    expect(human.code).toBe(3);
    expect(human.stdout).toMatch(/refused.*this task is success/);
  });

  it('retries failed tasks selected by filters: back to pending, due now, attempts reset, audited', async () => {
    const { code, json } = await runJson<CompensateJson>(
      [
        'compensate',
        '--action',
        'retry',
        '--biz-type',
        'coupon',
        '--biz-type',
        'sms',
        '--error-like',
        'timeout',
        '--reason',
        'network fixed',
        '--yes',
      ],
      { cwd, env: NY },
    );
    expect(code).toBe(0);
    assertMatchesSchema('compensate', json);
    expect(json.matched).toBe(2);
    expect(json.results.map((r) => r.outcome)).toEqual(['applied', 'applied']);
    for (const bizId of ['failed-2', 'failed-3']) {
      const row = await task(bizId);
      expect(row).toMatchObject({ status: 0, retry_count: 0, last_error: 'connect timeout' });
      expect(Math.abs(Number(row?.due_in))).toBeLessThan(30);
      const audit = await auditOf(Number(row?.id));
      expect(audit.map((a) => [a.action, a.from_status, a.to_status, a.reason])).toEqual([
        ['retry', 'failed', 'pending', 'network fixed'],
      ]);
    }
  });

  it('audit lists the retry with the database time, and nothing older than its window', async () => {
    const id = await idOf('failed-2');
    const audit = await runJson<AuditJson>(['audit', '--task', String(id), '--since', '10m'], {
      cwd,
      env: NY,
    });
    expect(audit.code).toBe(0);
    assertMatchesSchema('audit', audit.json);
    expect(audit.json.entries).toHaveLength(1);
    expect(audit.json.entries[0]).toMatchObject({
      action: 'retry',
      reason: 'network fixed',
      before: { status: 3 },
    });
    expect(Math.abs(Date.parse(audit.json.entries[0]?.at ?? '') - Date.now())).toBeLessThan(120_000);
    expect((await runJson<AuditJson>(['audit', '--until', '10m'], { cwd })).json.count).toBe(0);
  });

  it('marks pending and stuck processing tasks failed', async () => {
    const ids = [await idOf('pending-1'), await idOf('stuck-1')];
    const { code, json } = await runJson<CompensateJson>(
      ['compensate', ids.join(','), '--action', 'mark-failed', '--reason', 'partner gone', '--yes'],
      { cwd },
    );
    expect(code).toBe(0);
    expect(json.results.map((r) => [r.from, r.to, r.outcome])).toEqual([
      ['pending', 'failed', 'applied'],
      ['processing', 'failed', 'applied'],
    ]);
    expect((await task('pending-1'))?.status).toBe(3);
    expect((await task('stuck-1'))?.status).toBe(3);
  });

  it('forgets a failed task: the row is deleted and the audit keeps it whole, restorable', async () => {
    const original = await db.rows<Record<string, unknown>>(
      "SELECT * FROM async_task WHERE biz_id = 'failed-4'",
    );
    const id = Number(original[0]?.id);
    const { code, json } = await runJson<CompensateJson>(
      ['compensate', String(id), '--action', 'forget', '--reason', 'duplicate of failed-5', '--yes'],
      { cwd },
    );
    expect(code).toBe(0);
    expect(json.results).toEqual([{ id, from: 'failed', to: 'deleted', outcome: 'applied' }]);
    expect(await task('failed-4')).toBeUndefined();
    const [entry] = await auditOf(id);
    expect(entry?.after_json).toBeNull();
    const kept = JSON.parse(entry?.before_json as string) as Record<string, unknown>;
    // Restore it from the audit alone, then compare with the original row.
    const columns = Object.keys(kept);
    await db.run(
      `INSERT INTO async_task (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      columns.map((c) =>
        c === 'payload' && typeof kept[c] === 'object' ? JSON.stringify(kept[c]) : kept[c],
      ),
    );
    expect(await db.rows("SELECT * FROM async_task WHERE biz_id = 'failed-4'")).toEqual(original);
    await db.run("DELETE FROM async_task WHERE biz_id = 'failed-4'");
  });

  it('a rerun with the same ids redoes nothing and writes no second audit row', async () => {
    const id = await idOf('failed-1');
    const before = await snapshot();
    const { code, json } = await runJson<CompensateJson>(
      ['compensate', String(id), '--action', 'mark-compensated', '--yes'],
      { cwd },
    );
    expect(code).toBe(0);
    expect(json.results).toEqual([
      { id, from: 'compensated', to: 'compensated', outcome: 'already', reason: 'already compensated' },
    ]);
    expect(await snapshot()).toBe(before);
    const [forget] = await db.rows<{ task_id: string }>(
      "SELECT task_id FROM taskrecon_audit WHERE action = 'forget'",
    );
    const forgotten = await runJson<CompensateJson>(
      ['compensate', String(forget?.task_id), '--action', 'forget', '--yes'],
      { cwd },
    );
    expect(forgotten.code).toBe(0);
    expect(forgotten.json.results[0]?.outcome).toBe('already');
    expect(forgotten.json.results[0]?.reason).toMatch(/already forget at .* by /);
    expect(await snapshot()).toBe(before);
  });

  it('a dry run lists what would change and writes nothing', async () => {
    const before = await snapshot();
    const { code, json } = await runJson<CompensateJson>(['compensate', '--action', 'retry', '--dry-run'], {
      cwd,
    });
    expect(code).toBe(0);
    assertMatchesSchema('compensate', json);
    expect(json.dryRun).toBe(true);
    expect(json.applied).toBe(0);
    expect(json.results.length).toBeGreaterThan(0);
    expect(json.results.every((r) => r.outcome === 'would-apply' && r.from === 'failed')).toBe(true);
    expect(await snapshot()).toBe(before);
  });

  it('refuses bad input with exit 3, a message that says what is wrong, and nothing written', async () => {
    const before = await snapshot();
    const successId = await idOf('success-1');
    const cases: Array<{ args: string[]; message: RegExp; cwd?: string }> = [
      { args: ['999999', '--action', 'retry', '--yes'], message: /unknown task id 999999/ },
      {
        args: [String(successId), '--action', 'forget', '--yes'],
        message: /forget deletes failed rows only; this task is success/,
      },
      { args: [String(successId), '--action', 'explode', '--yes'], message: /--action/ },
      { args: ['--action', 'retry'], message: /not a terminal.*--yes/s },
      { args: ['--action', 'retry', '--yes'], message: /--reason is required/, cwd: strictCwd },
      {
        args: ['--action', 'retry', '--status', 'success', '--yes'],
        message: /selects no task that retry can move/,
      },
      {
        args: ['1', '--status', 'failed', '--action', 'retry', '--yes'],
        message: /ids or filters, not both/,
      },
      { args: ['--action', 'retry', '--rate', 'fast', '--yes'], message: /--rate/ },
    ];
    for (const c of cases) {
      const result = await runCli(['compensate', ...c.args], { cwd: c.cwd ?? cwd });
      expect(result.code, `${c.args.join(' ')}\n${result.stdout}${result.stderr}`).toBe(3);
      expect(result.stdout + result.stderr).toMatch(c.message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await snapshot()).toBe(before);
  });
});
