import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeRule } from '../../src/core/diff.js';
import { bindSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { profileFor } from '../../src/db/profiles/registry.js';
import { unsettledCandidates } from '../../src/db/sql/diff.js';
import type { Db, Queryable } from '../../src/db/types.js';
import { prepareRule } from '../../src/verbs/diff/prepare.js';
import { runCli } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

/**
 * The join walk cuts the task table into primary-key chunks sized toward --chunk-time, so each
 * chunk's statements must cost what the chunk holds. The open-task statement joins the chunk to
 * the business key: left to the statistics, MariaDB may read the business table first (here it
 * is tiny, and after a bulk load its estimates can be anything), which costs the whole business
 * table per chunk. The join is written to read the chunk first, whatever the statistics say.
 */
let schema: TestSchema;
let db: Db;

beforeAll(async () => {
  schema = await createTestSchema('diff_join_order');
  expect((await runCli(['init', '--db', schema.dsn])).code).toBe(0);
  await schema.sql.query(
    `CREATE TABLE user_coupon (id INT AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(64) NOT NULL, KEY (order_id))`,
  );
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time)
     SELECT 'coupon', CONCAT('o-', seq), CONCAT('e-', seq), IF(seq % 3 = 0, 3, 2), NOW() FROM seq_1_to_5000`,
  );
  await schema.sql.query(`INSERT INTO user_coupon (order_id) VALUES ('o-3'), ('o-6'), ('o-9')`);
  await schema.sql.query('ANALYZE TABLE async_task, user_coupon');
  db = await connect(schema.dsn);
});

afterAll(async () => {
  await db?.close();
  await schema?.drop();
});

/** The statement a chunk of the join walk runs for its open tasks, and its parameters. */
async function openTaskStatement(): Promise<{ sql: string; params: readonly unknown[] }> {
  const source = await bindSource(db, profileFor({ profile: 'async-task' }, 'sources.tasks'), 'tasks');
  const rule = normalizeRule(
    { name: 'coupon', bizType: 'coupon', business: { table: 'user_coupon', key: 'order_id' } },
    0,
  );
  const plan = await prepareRule(rule, source, db, { sourceDsn: schema.dsn, walk: 'join' });
  if (plan.kind !== 'join') throw new Error(`expected the join plan, got ${plan.kind}`);
  let seen: { sql: string; params: readonly unknown[] } | undefined;
  const recorder: Queryable = {
    query: async <T>(sql: string, params: readonly unknown[] = []) => {
      seen = { sql, params };
      return [] as T[];
    },
    execute: async () => ({ affectedRows: 0, insertId: 0 }),
  };
  await unsettledCandidates(recorder, plan.task, plan.business, { lo: 1, hi: 4000 });
  if (!seen) throw new Error('no statement was run');
  return seen;
}

describe('the join walk reads each chunk before the business table', () => {
  it('plans the open-task statement from the chunk of the task table, not a scan of the business table', async () => {
    const { sql, params } = await openTaskStatement();
    const [plan] = (await schema.sql.query(`EXPLAIN ${sql.replace(/^SET STATEMENT .*? FOR /, '')}`, [
      ...params,
    ])) as unknown as [Array<{ table: string }>];
    expect(plan.map((row) => row.table)).toEqual(['async_task', 'user_coupon']);
  });

  it('finds the same open tasks with business rows as before', async () => {
    const { sql, params } = await openTaskStatement();
    const [rows] = (await schema.sql.query(sql, [...params])) as unknown as [Array<{ id: number }>];
    expect(rows.map((row) => Number(row.id)).sort((a, b) => a - b)).toEqual([3, 6, 9]);
  });
});
