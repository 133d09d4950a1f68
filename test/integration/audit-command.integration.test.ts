import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

interface AuditJson {
  count: number;
  entries: Array<{
    id: number;
    at: string;
    operator: string;
    action: string;
    taskId: string;
    from: string;
    to: string;
    reason: string | null;
    runId: string;
    before: Record<string, unknown>;
    after: Record<string, unknown> | null;
  }>;
}

describe.each(TEST_ENGINES)('audit (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    db = await createEngineDb(engine, 'audit_cmd', { timeZone: '+08:00' });
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-audit-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${db.dsn}\nappTimeZone: "+08:00"\n`);
    expect((await runCli(['init'], { cwd })).code).toBe(0);
    await db.run(`INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error) VALUES
    ('coupon', 'a', 'ev-a', 3, 7, 'HTTP 500'), ('coupon', 'b', 'ev-b', 3, 7, 'HTTP 500'), ('sms', 'c', 'ev-c', 0, 1, NULL)`);
    const found = await db.rows<{ id: number; biz_id: string }>('SELECT id, biz_id FROM async_task');
    for (const row of found) ids[row.biz_id] = row.id;
    const steps = [
      [String(ids.a), '--action', 'mark-compensated', '--operator', 'alice@ops', '--reason', 'refunded'],
      [String(ids.b), '--action', 'retry', '--operator', 'bob@ops'],
      [String(ids.c), '--action', 'mark-failed', '--operator', 'alice@ops', '--reason', 'partner gone'],
      [String(ids.c), '--action', 'forget', '--operator', 'bob@ops'],
    ];
    for (const args of steps) expect((await runCli(['compensate', ...args, '--yes'], { cwd })).code).toBe(0);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('lists every manual change oldest first, with before, after, operator and reason', async () => {
    const { code, json } = await runJson<AuditJson>(['audit'], { cwd, env: { TZ: 'America/New_York' } });
    expect(code).toBe(0);
    assertMatchesSchema('audit', json);
    expect(json.entries.map((e) => [Number(e.taskId), e.action, e.operator, e.from, e.to, e.reason])).toEqual(
      [
        [ids.a, 'mark-compensated', 'alice@ops', 'failed', 'compensated', 'refunded'],
        [ids.b, 'retry', 'bob@ops', 'failed', 'pending', null],
        [ids.c, 'mark-failed', 'alice@ops', 'pending', 'failed', 'partner gone'],
        [ids.c, 'forget', 'bob@ops', 'failed', 'deleted', null],
      ],
    );
    expect(json.entries[0]?.before).toMatchObject({ status: 3 });
    expect(json.entries[0]?.after).toMatchObject({ status: 4 });
    expect(json.entries[3]?.after).toBeNull();
    const [now] = await db.rows<{ t: number }>(`SELECT ${db.epoch('now')} AS t`);
    expect(Math.abs(Date.parse(json.entries[0]?.at ?? '') / 1000 - Number(now?.t))).toBeLessThan(120);
  });

  it('filters by task, operator, action, run and time', async () => {
    const audit = (...args: string[]) => runJson<AuditJson>(['audit', ...args], { cwd });
    // Read-only runs, side by side.
    const [byTask, byOperator, byAction, since, until, future, limited] = await Promise.all([
      audit('--task', String(ids.c)),
      audit('--operator', 'alice@ops'),
      audit('--action', 'retry', '--action', 'forget'),
      audit('--since', '1h'),
      audit('--until', '1h'),
      audit('--since', '2099-01-01T00:00:00Z'),
      audit('--limit', '1'),
    ]);
    expect(byTask.json.entries.map((e) => e.action)).toEqual(['mark-failed', 'forget']);
    expect(byOperator.json.entries.map((e) => e.action)).toEqual(['mark-compensated', 'mark-failed']);
    expect(byAction.json.count).toBe(2);
    const run = byAction.json.entries[0]?.runId as string;
    expect((await audit('--run', run)).json.entries.map((e) => e.action)).toEqual(['retry']);
    expect(since.json.count).toBe(4);
    expect(until.json.count).toBe(0);
    expect(future.json.count).toBe(0);
    expect(limited.json.entries.map((e) => e.action)).toEqual(['forget']);
  });

  it('streams ndjson and csv', async () => {
    const ndjson = await runCli(['audit', '--limit', '0', '--format', 'ndjson'], { cwd });
    expect(ndjson.code).toBe(0);
    const lines = ndjson.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { action: string });
    expect(lines.map((l) => l.action)).toEqual(['mark-compensated', 'retry', 'mark-failed', 'forget']);
    const csv = await runCli(['audit', '--format', 'csv', '--operator', 'bob@ops'], { cwd });
    const rows = csv.stdout.trim().split('\n');
    expect(rows[0]).toBe(
      'id,at,operator,host,action,source,table,taskId,eventId,from,to,reason,runId,before,after',
    );
    expect(rows).toHaveLength(3);
    expect(rows[1]).toMatch(/,bob@ops,.*,retry,async-task,async_task,/);
  });

  it('says how to create the audit table when it is missing', async () => {
    await db.run('ALTER TABLE taskrecon_audit RENAME TO taskrecon_audit_moved');
    try {
      const result = await runCli(['audit'], { cwd });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/taskrecon_audit does not exist.*\n.*init --audit-only/);
    } finally {
      await db.run('ALTER TABLE taskrecon_audit_moved RENAME TO taskrecon_audit');
    }
  });
});
