import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';

let schema: TestSchema;
let cwd: string;
const ids: Record<string, number> = {};

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

beforeAll(async () => {
  schema = await createTestSchema('audit_cmd', { timeZone: '+08:00' });
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-audit-'));
  writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${schema.dsn}\nappTimeZone: "+08:00"\n`);
  expect((await runCli(['init'], { cwd })).code).toBe(0);
  await schema.sql
    .query(`INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error) VALUES
    ('coupon', 'a', 'ev-a', 3, 7, 'HTTP 500'), ('coupon', 'b', 'ev-b', 3, 7, 'HTTP 500'), ('sms', 'c', 'ev-c', 0, 1, NULL)`);
  const [found] = (await schema.sql.query('SELECT id, biz_id FROM async_task')) as unknown as [
    Array<{ id: number; biz_id: string }>,
  ];
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
  await schema?.drop();
});

describe('audit', () => {
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
    const [[now]] = (await schema.sql.query('SELECT UNIX_TIMESTAMP() AS t')) as unknown as [[{ t: number }]];
    expect(Math.abs(Date.parse(json.entries[0]?.at ?? '') / 1000 - Number(now.t))).toBeLessThan(120);
  });

  it('filters by task, operator, action, run and time', async () => {
    const byTask = await runJson<AuditJson>(['audit', '--task', String(ids.c)], { cwd });
    expect(byTask.json.entries.map((e) => e.action)).toEqual(['mark-failed', 'forget']);
    const byOperator = await runJson<AuditJson>(['audit', '--operator', 'alice@ops'], { cwd });
    expect(byOperator.json.entries.map((e) => e.action)).toEqual(['mark-compensated', 'mark-failed']);
    const byAction = await runJson<AuditJson>(['audit', '--action', 'retry', '--action', 'forget'], { cwd });
    expect(byAction.json.count).toBe(2);
    const run = byAction.json.entries[0]?.runId as string;
    expect(
      (await runJson<AuditJson>(['audit', '--run', run], { cwd })).json.entries.map((e) => e.action),
    ).toEqual(['retry']);
    expect((await runJson<AuditJson>(['audit', '--since', '1h'], { cwd })).json.count).toBe(4);
    expect((await runJson<AuditJson>(['audit', '--until', '1h'], { cwd })).json.count).toBe(0);
    expect((await runJson<AuditJson>(['audit', '--since', '2099-01-01T00:00:00Z'], { cwd })).json.count).toBe(
      0,
    );
    expect(
      (await runJson<AuditJson>(['audit', '--limit', '1'], { cwd })).json.entries.map((e) => e.action),
    ).toEqual(['forget']);
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
    await schema.sql.query('RENAME TABLE taskrecon_audit TO taskrecon_audit_moved');
    try {
      const result = await runCli(['audit'], { cwd });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/taskrecon_audit does not exist.*\n.*init --audit-only/);
    } finally {
      await schema.sql.query('RENAME TABLE taskrecon_audit_moved TO taskrecon_audit');
    }
  });
});
