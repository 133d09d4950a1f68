import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * The dispatch that never happened: the payment callback's push threw, the order is paid and no
 * task exists. `diff --create-missing` creates each missing task once (event id <rule>:<key>,
 * UNIQUE), audited; redrive then runs them. The same suite on every engine.
 */
interface CreateJson {
  createMissing?: {
    dryRun: boolean;
    created: number;
    existing: number;
    refused: number;
    results: Array<{ key: string; eventId: string; outcome: string; taskId: number | null }>;
  };
}

describe.each(TEST_ENGINES)('diff --create-missing on %s', (engine) => {
  let db: EngineDb;
  let cwd: string;
  const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);

  function writeConfig(payload: string): void {
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        'sources:',
        '  tasks: { profile: async-task, table: async_task, default: true }',
        'handlers:',
        '  default: { type: mark-only }',
        'rules:',
        `  - { name: sms-paid, bizType: sms, taskStatus: [success], business: { table: paid_order, key: order_no, where: "status = 'paid'" }, create: { payload: [${payload}] } }`,
        '',
      ].join('\n'),
    );
  }

  async function order(orderNo: string, status = 'paid'): Promise<void> {
    await db.run('INSERT INTO paid_order (order_no, user_id, amount, status) VALUES (?, ?, ?, ?)', [
      orderNo,
      Number(orderNo.replace(/\D/g, '')),
      '99.50',
      status,
    ]);
  }

  beforeAll(async () => {
    db = await createEngineDb(engine, 'sweep_create', { timeZone: '+08:00' });
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-create-missing-'));
    writeConfig('order_no, user_id, amount');
    expect((await runCli(['init'], { cwd })).code).toBe(0);
    await db.run(`CREATE TABLE paid_order (
      id ${db.autoId}, order_no varchar(32) NOT NULL, user_id int NOT NULL,
      amount decimal(10,2) NOT NULL, status varchar(16) NOT NULL)`);
    await db.run('CREATE INDEX idx_order_no ON paid_order (order_no)');
    for (const n of ['P1', 'P2', 'P3', 'P4', 'P5']) await order(n);
    await order('U1', 'unpaid');
    for (const n of ['P1', 'P2'])
      await db.run(
        `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, created_at, updated_at) VALUES ('sms', ?, ?, '{}', 2, 0, ${db.at(0)}, ${db.at(0)}, ${db.at(0)})`,
        [n, `pay:${n}`],
      );
  });

  afterAll(async () => {
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('refuses without a confirmation off a terminal, and stops on a payload column the table lacks; nothing written', async () => {
    const noYes = await runCli(['diff', '--create-missing'], { cwd });
    expect(noYes.code).toBe(3);
    expect(noYes.stderr).toMatch(/refuses to create tasks without a confirmation/);
    writeConfig('order_no, phone');
    const bad = await runCli(['diff', '--create-missing', '--yes'], { cwd });
    expect(bad.code).toBe(3);
    expect(bad.stderr).toMatch(/rules\.sms-paid\.create\.payload: paid_order has no column phone/);
    writeConfig('order_no, user_id, amount');
    expect((await rows('SELECT id FROM async_task')).length).toBe(2);
    expect(await rows('SELECT id FROM taskrecon_audit')).toEqual([]);
  });

  it('--dry-run lists the tasks it would create and writes nothing', async () => {
    const { code, json } = await runJson<CreateJson>(['diff', '--create-missing', '--dry-run'], { cwd });
    expect(code).toBe(1);
    assertMatchesSchema('diff', json);
    expect(json.createMissing?.results.map((r) => [r.eventId, r.outcome]).sort()).toEqual([
      ['sms-paid:P3', 'would-create'],
      ['sms-paid:P4', 'would-create'],
      ['sms-paid:P5', 'would-create'],
    ]);
    expect((await rows('SELECT id FROM async_task')).length).toBe(2);
  });

  it('creates each missing task once, pending and due now, with the named columns as payload, audited', async () => {
    const { json } = await runJson<CreateJson>(['diff', '--create-missing', '--yes'], { cwd });
    assertMatchesSchema('diff', json);
    expect(json.createMissing?.created).toBe(3);
    const created = await rows<{
      biz_id: string;
      event_id: string;
      payload: string;
      status: number;
      due: number;
    }>(
      `SELECT biz_id, event_id, payload, status, CASE WHEN next_retry_time <= ${db.at(0)} THEN 1 ELSE 0 END AS due FROM async_task WHERE event_id LIKE 'sms-paid:%' ORDER BY biz_id`,
    );
    expect(created.map((t) => [t.biz_id, t.event_id, t.status, Number(t.due)])).toEqual([
      ['P3', 'sms-paid:P3', 0, 1],
      ['P4', 'sms-paid:P4', 0, 1],
      ['P5', 'sms-paid:P5', 0, 1],
    ]);
    const payload: unknown = created[0]?.payload;
    expect(typeof payload === 'string' ? JSON.parse(payload) : payload).toEqual({
      order_no: 'P3',
      user_id: 3,
      amount: 99.5,
    });
    const audit = await rows<{ action: string; event_id: string; to_status: string }>(
      'SELECT action, event_id, to_status FROM taskrecon_audit ORDER BY event_id',
    );
    expect(audit).toEqual([
      { action: 'create-missing', event_id: 'sms-paid:P3', to_status: 'pending' },
      { action: 'create-missing', event_id: 'sms-paid:P4', to_status: 'pending' },
      { action: 'create-missing', event_id: 'sms-paid:P5', to_status: 'pending' },
    ]);
  });

  it('a second run creates nothing', async () => {
    const { json } = await runJson<CreateJson>(['diff', '--create-missing', '--yes'], { cwd });
    expect(json.createMissing?.created).toBe(0);
    expect((await rows('SELECT id FROM async_task')).length).toBe(5);
    expect((await rows('SELECT id FROM taskrecon_audit')).length).toBe(3);
  });

  it('two runs at once create each task once (the UNIQUE event id decides)', async () => {
    for (let n = 6; n <= 25; n++) await order(`P${n}`);
    const [a, b] = await Promise.all([
      runJson<CreateJson>(['diff', '--create-missing', '--yes'], { cwd }),
      runJson<CreateJson>(['diff', '--create-missing', '--yes'], { cwd }),
    ]);
    expect((a.json.createMissing?.created ?? 0) + (b.json.createMissing?.created ?? 0)).toBe(20);
    const perEvent = await rows<{ n: number }>(
      "SELECT COUNT(*) AS n FROM async_task WHERE event_id LIKE 'sms-paid:%' GROUP BY event_id HAVING COUNT(*) > 1",
    );
    expect(perEvent).toEqual([]);
    expect((await rows("SELECT id FROM taskrecon_audit WHERE action = 'create-missing'")).length).toBe(23);
  });

  it('redrive then runs the created tasks', async () => {
    const { code, json } = await runJson<{ claimed: number; succeeded: number }>(['redrive'], { cwd });
    expect(code).toBe(0);
    expect(json.succeeded).toBe(23);
    const open = await rows("SELECT id FROM async_task WHERE event_id LIKE 'sms-paid:%' AND status <> 2");
    expect(open).toEqual([]);
  });
});
