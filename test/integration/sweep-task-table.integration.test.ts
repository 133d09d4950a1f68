import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * The sweep over a task table (the classic task-table design), on every engine: failed tasks
 * retried failed → pending through the state machine, once however many sweeps run, only inside
 * their window and outside the blackout, schema errors held, a task failed again after its sweep
 * a second failure (exit 1, alerted once). appTimeZone is Asia/Shanghai (UTC+8, no DST); the
 * windows are written relative to the database's now in that zone, the failure times relative to
 * the database's now.
 */
const ZONE_OFFSET = 8 * 3600;

interface SweepJson {
  retried: number;
  deferred: number;
  held: number;
  secondFailures: number;
  unmatched: number;
  results: Array<{
    id: number;
    rule: string;
    outcome: string;
    eligibleAt: string | null;
    identity: string;
    alerted?: boolean;
  }>;
}

const hhmm = (minuteOfDay: number) => {
  const m = ((minuteOfDay % 1440) + 1440) % 1440;
  return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
};

let hook: Server;
const hooks: string[] = [];

beforeAll(async () => {
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      hooks.push(body);
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  await new Promise((resolve) => hook?.close(resolve));
});

describe.each(TEST_ENGINES)('sweep over a task table on %s', (engine) => {
  let db: EngineDb;
  let cwd: string;
  let nowEpoch = 0;
  let hooksBefore = 0;
  const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);
  /** The local minute of the database's now, in appTimeZone. */
  const minute = () => Math.floor(((((nowEpoch + ZONE_OFFSET) % 86_400) + 86_400) % 86_400) / 60);
  /** The instant local minute `offset` from now's minute starts (the next one at or after now). */
  const opensAt = (offset: number) => {
    const localSecond = (((nowEpoch + ZONE_OFFSET) % 86_400) + 86_400) % 86_400;
    const boundary = ((((minute() + offset) % 1440) + 1440) % 1440) * 60;
    const delta = (((boundary - localSecond) % 86_400) + 86_400) % 86_400;
    return new Date((nowEpoch + delta) * 1000).toISOString().replace('.000Z', 'Z');
  };

  async function failed(bizType: string, bizId: string, error: string, agoSeconds: number): Promise<void> {
    await db.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
       VALUES (?, ?, ?, '{}', 3, 8, ${db.at(0)}, ?, ${db.at(-agoSeconds - 600)}, ${db.at(-agoSeconds)})`,
      [bizType, bizId, `${bizType}:${bizId}`, error],
    );
  }

  beforeAll(async () => {
    // MySQL's DATETIME is a wall-clock time: the seeding session writes it in appTimeZone.
    db = await createEngineDb(engine, 'sweep_tasks', { timeZone: '+08:00' });
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-sweep-tasks-'));
    const [clock] = await rows<{ now: number }>(`SELECT ${db.epoch('now')} AS now`);
    nowEpoch = Number(clock?.now);
    const m = minute();
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        'appTimeZone: Asia/Shanghai',
        'sources:',
        '  tasks: { profile: async-task, table: async_task, default: true }',
        'report:',
        `  notify: [{ kind: generic, url: "http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook" }]`,
        'sweeps:',
        '  - { name: coupon, match: { bizType: coupon }, action: retry, maxSweeps: 1 }',
        `  - { name: open, match: { bizType: pick }, action: retry, window: "${hhmm(m - 60)}-${hhmm(m + 60)}" }`,
        // Across midnight, now outside: opens 60 minutes from now.
        `  - { name: closed, match: { bizType: pack }, action: retry, window: "${hhmm(m + 60)}-${hhmm(m - 30)}" }`,
        // Inside the window, but in the blackout until 30 minutes from now.
        `  - { name: maint, match: { bizType: ship }, action: retry, window: "${hhmm(m - 120)}-${hhmm(m + 120)}", blackout: ["${hhmm(m - 30)}-${hhmm(m + 30)}"] }`,
        "  - { name: schema, match: { errorLike: 'Unknown column' }, action: hold }",
        '',
      ].join('\n'),
    );
    expect((await runCli(['init'], { cwd })).code).toBe(0);
    await failed('coupon', 'o1', 'partner 500', 300);
    await failed('coupon', 'o2', 'partner 500', 300);
    // Failed two hours ago: the business of an earlier sweep.
    await failed('coupon', 'o3', 'partner 500', 7200);
    await failed('pick', 'k1', 'warehouse 503', 120);
    await failed('pack', 'p1', 'warehouse 503', 120);
    await failed('ship', 's1', 'warehouse in maintenance', 120);
    await failed('report', 'r1', "SQLSTATE[42S22]: Unknown column 'x'", 60);
    await failed('mail', 'm1', 'smtp 421', 60);
    // Not failed: no sweep business.
    await db.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, created_at, updated_at)
       VALUES ('coupon', 'ok1', 'coupon:ok1', '{}', 2, 0, ${db.at(0)}, ${db.at(-600)}, ${db.at(-60)})`,
    );
  });

  afterAll(async () => {
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('--dry-run says what each rule would do and writes nothing', async () => {
    const { code, json } = await runJson<SweepJson>(['sweep', '--since', '1h', '--dry-run'], { cwd });
    expect(code).toBe(0);
    assertMatchesSchema('sweep', json);
    const by = (outcome: string) =>
      json.results
        .filter((r) => r.outcome === outcome)
        .map((r) => r.rule)
        .sort();
    expect(by('would-retry')).toEqual(['coupon', 'coupon', 'open']);
    expect(by('deferred')).toEqual(['closed', 'maint']);
    expect(by('held')).toEqual(['schema']);
    expect(json.unmatched).toBe(1);
    expect(json.results.find((r) => r.rule === 'closed')?.eligibleAt).toBe(opensAt(60));
    expect(json.results.find((r) => r.rule === 'maint')?.eligibleAt).toBe(opensAt(30));
    expect(json.results.map((r) => r.identity)).not.toContain('coupon:o3');
    expect(await rows('SELECT id FROM taskrecon_audit')).toEqual([]);
    expect((await rows('SELECT id FROM async_task WHERE status = 3')).length).toBe(8);
  });

  it('retries the eligible tasks failed → pending, due now, attempts reset, audited with the event id', async () => {
    const { code, json } = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
    expect(code).toBe(0);
    assertMatchesSchema('sweep', json);
    expect([json.retried, json.deferred, json.held, json.secondFailures]).toEqual([3, 2, 1, 0]);
    const tasks = await rows<{ biz_id: string; status: number; retry_count: number; due: number }>(
      `SELECT biz_id, status, retry_count, CASE WHEN next_retry_time <= ${db.at(0)} THEN 1 ELSE 0 END AS due
         FROM async_task WHERE biz_id <> 'ok1' ORDER BY biz_id`,
    );
    expect(tasks.map((t) => [t.biz_id, t.status, t.retry_count, Number(t.due)])).toEqual([
      ['k1', 0, 0, 1],
      ['m1', 3, 8, 1],
      ['o1', 0, 0, 1],
      ['o2', 0, 0, 1],
      ['o3', 3, 8, 1],
      ['p1', 3, 8, 1],
      ['r1', 3, 8, 1],
      ['s1', 3, 8, 1],
    ]);
    const audit = await rows<{ action: string; event_id: string; from_status: string; to_status: string }>(
      'SELECT action, event_id, from_status, to_status FROM taskrecon_audit ORDER BY event_id',
    );
    expect(audit).toEqual([
      { action: 'sweep-retry', event_id: 'coupon:o1', from_status: 'failed', to_status: 'pending' },
      { action: 'sweep-retry', event_id: 'coupon:o2', from_status: 'failed', to_status: 'pending' },
      { action: 'sweep-retry', event_id: 'pick:k1', from_status: 'failed', to_status: 'pending' },
    ]);
  });

  it('does nothing new when the same sweep runs again', async () => {
    const { code, json } = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
    expect(code).toBe(0);
    expect([json.retried, json.deferred, json.held, json.secondFailures]).toEqual([0, 2, 1, 0]);
    expect((await rows('SELECT id FROM taskrecon_audit')).length).toBe(3);
  });

  it('a task that fails again after its sweep is a second failure: exit 1, not retried, alerted once', async () => {
    // The audit row of the sweep and the new failure must not share a second.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await db.run(
      `UPDATE async_task SET status = 3, retry_count = 8, last_error = 'partner 500 again', updated_at = ${db.at(0)} WHERE biz_id = 'o1'`,
    );
    hooksBefore = hooks.length;
    const first = await runJson<SweepJson>(['sweep', '--since', '1h', '--source', 'tasks', '--notify'], {
      cwd,
    });
    expect(first.code).toBe(1);
    assertMatchesSchema('sweep', first.json);
    expect(first.json.results.filter((r) => r.outcome === 'second-failure')).toEqual([
      expect.objectContaining({ rule: 'coupon', identity: 'coupon:o1', alerted: true }),
    ]);
    expect(first.json.retried).toBe(0);
    expect(
      (await rows<{ status: number }>("SELECT status FROM async_task WHERE biz_id = 'o1'"))[0]?.status,
    ).toBe(3);
    expect(hooks.length).toBe(hooksBefore + 1);
    expect(hooks[hooksBefore]).toContain('coupon:o1');
    const again = await runJson<SweepJson>(['sweep', '--since', '1h', '--notify'], { cwd });
    expect(again.code).toBe(1);
    expect(again.json.results.find((r) => r.outcome === 'second-failure')?.alerted).toBe(false);
    expect(hooks.length).toBe(hooksBefore + 1);
    expect((await rows("SELECT id FROM taskrecon_audit WHERE action = 'sweep-alert'")).length).toBe(1);
    const quiet = await runCli(['sweep', '--quiet'], { cwd });
    expect(quiet.code).toBe(1);
    expect(quiet.stdout).toMatch(/Second failures/);
    // --notify with no webhook anywhere: exit 3 before anything is read.
    writeFileSync(
      join(cwd, 'nohook.yaml'),
      [
        `db: ${db.dsn}`,
        'sweeps:',
        '  - { name: coupon, match: { bizType: coupon }, action: retry }',
        '',
      ].join('\n'),
    );
    const noHook = await runCli(['sweep', '--notify', '--config', 'nohook.yaml'], { cwd });
    expect(noHook.code).toBe(3);
    expect(noHook.stderr).toMatch(/--notify: no webhook is configured/);
  });

  it('report counts second failures and deferrals; scan lists the second failures', async () => {
    const report = await runJson<{ sweep?: { secondFailures: number; deferred: number } }>(
      ['report', '--window', '1h'],
      { cwd },
    );
    expect(report.code).not.toBe(3);
    assertMatchesSchema('report', report.json);
    expect(report.json.sweep).toEqual({ secondFailures: 1, deferred: 2 });
    const scan = await runJson<{ secondFailures?: Array<{ rule: string; bizType: string }> }>(
      ['scan', '--second-failures'],
      { cwd },
    );
    expect(scan.code).toBe(0);
    assertMatchesSchema('scan', scan.json);
    expect(scan.json.secondFailures?.map((r) => [r.rule, r.bizType])).toEqual([['coupon', 'coupon']]);
    // --error-like ignores ASCII case on every engine, as the sweep's errorLike does.
    const byError = await runJson<{ summary: { total: number } }>(
      ['scan', '--error-like', 'unknown COLUMN'],
      {
        cwd,
      },
    );
    expect(byError.json.summary.total).toBe(1);
  });

  it('a table nobody needs to look at gives exit 0 and --quiet prints nothing', async () => {
    await db.run('UPDATE async_task SET status = 2 WHERE status = 3');
    const { code, json } = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
    expect(code).toBe(0);
    expect([json.retried, json.deferred, json.held, json.secondFailures]).toEqual([0, 0, 0, 0]);
    const quiet = await runCli(['sweep', '--quiet'], { cwd });
    expect([quiet.code, quiet.stdout, quiet.stderr]).toEqual([0, '', '']);
  });
});
