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

  it('refuses the merge walk, which needs collation weights, with exit 3', async () => {
    const result = await runCli(['diff', '--walk', 'merge'], { cwd });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/collation weights/);
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
