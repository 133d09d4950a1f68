import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';
import { configDir } from '../fixtures/redrive/seed.js';
import { assertMatchesSchema } from '../support/schemas.js';

interface DiffJson {
  rules: Array<{ name: string; walk: string; findings: Record<string, number> }>;
}

let db: PgTestDatabase;
let cwd: string;

beforeAll(async () => {
  db = await createPgDatabase('pg_diff');
  const init = await runCli(['init', '--db', db.dsn]);
  expect(init.code, init.stderr).toBe(0);
  await db.sql.query(`
    CREATE TABLE coupon (id bigserial PRIMARY KEY, order_id varchar(64) NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
    CREATE INDEX idx_coupon_order ON coupon (order_id);
    INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES
      ('coupon', 'o-1', 'd1', 2), ('coupon', 'o-2', 'd2', 2), ('coupon', 'o-3', 'd3', 3), ('coupon', 'o-4', 'd4', 3);
    INSERT INTO coupon (order_id) VALUES ('o-1'), ('o-3'), ('o-9');`);
  cwd = configDir(
    `db: ${db.dsn}\nrules:\n  - { name: coupons, bizType: coupon, business: { table: coupon, key: order_id } }\n`,
  );
});

afterAll(async () => {
  await db?.drop();
});

describe('diff on PostgreSQL', () => {
  it('finds missing, orphan and unsettled effects with the join walk', async () => {
    const { code, json, stderr } = await runJson<DiffJson>(['diff', '--walk', 'join'], { cwd });
    // Findings exit 1, by contract.
    expect(code, stderr).toBe(1);
    assertMatchesSchema('diff', json);
    const [rule] = json.rules;
    expect(rule?.walk).toBe('join');
    expect(rule?.findings).toMatchObject({ missing: 1, duplicate: 0, orphan: 1, unsettled: 1 });
  });

  it('merges the key indexes byte-wise with the same findings as the join walk', async () => {
    const { code, json, stderr } = await runJson<DiffJson>(['diff', '--walk', 'merge'], { cwd });
    expect(code, stderr).toBe(1);
    assertMatchesSchema('diff', json);
    const [rule] = json.rules;
    expect(rule?.walk).toBe('merge');
    expect(rule?.findings).toMatchObject({ missing: 1, duplicate: 0, orphan: 1, unsettled: 1 });
  });

  it('refuses the merge walk for a rule with a business where, with exit 3', async () => {
    const where = configDir(
      `db: ${db.dsn}\nrules:\n  - { name: coupons, bizType: coupon, business: { table: coupon, key: order_id, where: "1=1" } }\n`,
    );
    const result = await runCli(['diff', '--walk', 'merge'], { cwd: where });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/cannot merge the key indexes: the rule has a business where/);
    expect(result.stderr).toMatch(/--walk join/);
  });
});

describe('compensate and audit on PostgreSQL', () => {
  it('retries a failed task, audited, and audit lists the change', async () => {
    const [task] = await db.rows<{ id: string }>(`SELECT id FROM async_task WHERE biz_id = 'o-4'`);
    const id = String(task?.id);
    const { code, json, stderr } = await runJson<{ applied: number }>(
      ['compensate', id, '--action', 'retry', '--reason', 'upstream fixed', '-y'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json.applied).toBe(1);
    const [row] = await db.rows<{ status: number }>(`SELECT status FROM async_task WHERE id = $1`, [id]);
    expect(row?.status).toBe(0);
    const audit = await runJson<{
      entries: Array<{ taskId: string; action: string; from: string; to: string }>;
    }>(['audit'], { cwd });
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.json.entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ taskId: id, action: 'retry', from: 'failed', to: 'pending' }),
      ]),
    );
  });
});

describe('diff --create-missing on PostgreSQL', () => {
  it('creates a pending task for each business row without one, once, audited', async () => {
    await db.sql.query(`
      CREATE TABLE paid_order (id bigserial PRIMARY KEY, order_no varchar(32) NOT NULL, user_id int NOT NULL,
        amount numeric(10,2) NOT NULL, status varchar(16) NOT NULL);
      CREATE INDEX idx_paid_order_no ON paid_order (order_no);
      INSERT INTO paid_order (order_no, user_id, amount, status) VALUES
        ('P1', 1, 99.50, 'paid'), ('P2', 2, 99.50, 'paid'), ('U1', 3, 1, 'unpaid');
      INSERT INTO async_task (biz_type, biz_id, event_id, payload, status) VALUES ('sms', 'P1', 'pay:P1', '{}', 2);`);
    const create = configDir(
      [
        `db: ${db.dsn}`,
        'handlers:',
        '  default: { type: mark-only }',
        'rules:',
        `  - { name: sms-paid, bizType: sms, taskStatus: [success], business: { table: paid_order, key: order_no, where: "status = 'paid'" }, create: { payload: [order_no, user_id, amount] } }`,
        '',
      ].join('\n'),
    );
    for (let run = 0; run < 2; run++) {
      const result = await runCli(['diff', '--create-missing', '--yes', '--json'], { cwd: create });
      expect(result.code, result.stderr).not.toBe(3);
    }
    const created = await db.rows<{ id: string; event_id: string; status: number; payload: string }>(
      `SELECT id, event_id, status, payload::text AS payload FROM async_task WHERE biz_type = 'sms' AND biz_id <> 'P1'`,
    );
    expect(created.map((r) => [r.event_id, r.status])).toEqual([['sms-paid:P2', 0]]);
    expect(JSON.parse(created[0]?.payload ?? '{}')).toMatchObject({ order_no: 'P2', user_id: 2 });
    const audit = await db.rows<{ task_id: string }>(
      `SELECT task_id FROM taskrecon_audit WHERE action = 'create-missing' AND event_id = 'sms-paid:P2'`,
    );
    expect(audit.map((r) => r.task_id)).toEqual([String(created[0]?.id)]);
  });
});
