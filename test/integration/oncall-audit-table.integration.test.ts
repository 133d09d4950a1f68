import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

// A task's audit history follows its table: reached through --profile or a config's named source,
// the same task shows the same history.
interface ShowJson {
  task: { id: number | string; status: string };
  audit: Array<{ action: string; source: string; table: string; reason: string | null }>;
}
interface AuditJson {
  count: number;
  entries: Array<{ action: string; taskId: string }>;
}

describe.each(TEST_ENGINES)('the audit history follows the table, not the source name (%s)', (engine) => {
  let schema: EngineDb;
  let cwd: string;

  beforeAll(async () => {
    schema = await createEngineDb(engine, 'oncall_audit_table');
    const init = await runCli(['init', '--db', schema.dsn]);
    expect(init.code, init.stderr).toBe(0);
    await schema.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error) VALUES
     ('coupon', 'ORD1', 'evt-1', 3, 8, 'HTTP 503'), ('coupon', 'ORD2', 'evt-2', 3, 8, 'HTTP 503')`,
    );
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-audit-table-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [`db: ${schema.dsn}`, 'sources:', '  orders: { profile: async-task, table: async_task }', ''].join(
        '\n',
      ),
    );
  }, 60_000);

  afterAll(async () => {
    await schema?.drop();
  });

  it('a task compensated via --profile shows that history through the named source', async () => {
    const done = await runJson(
      [
        'compensate',
        '1',
        '--profile',
        'async-task',
        '--db',
        schema.dsn,
        '--action',
        'mark-compensated',
        '--reason',
        'refunded by hand',
        '--yes',
      ],
      { cwd: tmpdir() },
    );
    expect(done.code, done.stderr).toBe(0);

    const show = await runJson<ShowJson>(['show', '1', '--source', 'orders'], { cwd });
    expect(show.code, show.stderr).toBe(0);
    expect(show.json.audit.map((a) => [a.action, a.source, a.table, a.reason])).toEqual([
      ['mark-compensated', 'async-task', 'async_task', 'refunded by hand'],
    ]);
    const audit = await runJson<AuditJson>(['audit', '--task', '1', '--source', 'orders'], { cwd });
    expect(audit.json.entries.map((e) => [e.action, e.taskId])).toEqual([['mark-compensated', '1']]);
  });

  it('and a change through the named source shows through --profile: one history either way', async () => {
    const done = await runJson(
      ['compensate', '2', '--source', 'orders', '--action', 'retry', '--reason', 'again', '--yes'],
      { cwd },
    );
    expect(done.code, done.stderr).toBe(0);
    const viaProfile = await runJson<ShowJson>(['show', '2', '--profile', 'async-task', '--db', schema.dsn], {
      cwd: tmpdir(),
    });
    const viaSource = await runJson<ShowJson>(['show', '2', '--source', 'orders'], { cwd });
    expect(viaProfile.json.audit.map((a) => [a.action, a.source])).toEqual([['retry', 'orders']]);
    expect(viaSource.json.audit).toEqual(viaProfile.json.audit);
    // The first task's history stayed its own.
    const first = await runJson<ShowJson>(['show', '1', '--profile', 'async-task', '--db', schema.dsn], {
      cwd: tmpdir(),
    });
    expect(first.json.audit.map((a) => a.action)).toEqual(['mark-compensated']);
  });
});
