import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { store } from '../../src/db/port/index.js';
import { profileFor } from '../../src/db/profiles/registry.js';
import type { Db, Queryable } from '../../src/db/types.js';
import { effectChecker } from '../../src/ops/effect/index.js';
import { runCli } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

/**
 * The effect check of a bulk retry batches its lookups: for thousands of tasks, at most two
 * statements per rule and 500 keys (business rows by key; the rule's tasks by key, for keys with
 * rows), never one per task; and each
 * task's state is what its business rows say (0 missing, 1 present, 2+ duplicated). On every engine.
 */
const TASKS = 2_400;
const rowsOf = (k: number) => (k % 3 === 0 ? 1 : 0) + (k % 5 === 0 ? 2 : 0);
const expected = (k: number) => (rowsOf(k) === 0 ? 'missing' : rowsOf(k) === 1 ? 'present' : 'duplicated');

describe.each(TEST_ENGINES)('the effect check in bulk (%s)', (engine) => {
  let edb: EngineDb;
  let db: Db;
  let source: BoundSource;

  beforeAll(async () => {
    edb = await createEngineDb(engine, 'effect_batch');
    expect((await runCli(['init', '--db', edb.dsn])).code).toBe(0);
    await edb.run('CREATE TABLE user_coupon (order_id VARCHAR(64) NOT NULL)');
    await edb.run('CREATE INDEX user_coupon_order ON user_coupon (order_id)');
    const tasks: unknown[][] = [];
    const coupons: unknown[][] = [];
    for (let k = 1; k <= TASKS; k++) {
      tasks.push(['coupon', `o-${k}`, `e-${k}`, '{}', 3, 7]);
      for (let i = 0; i < rowsOf(k); i++) coupons.push([`o-${k}`]);
    }
    await edb.insertRows(
      'async_task',
      ['biz_type', 'biz_id', 'event_id', 'payload', 'status', 'retry_count'],
      tasks,
    );
    await edb.insertRows('user_coupon', ['order_id'], coupons);
    db = await connect(edb.dsn);
    source = await bindSource(db, profileFor({ profile: 'async-task' }, 'sources.tasks'), 'tasks');
  });

  afterAll(async () => {
    await db?.close();
    await edb?.drop();
  });

  it(`looks up ${TASKS.toLocaleString('en-US')} tasks in a few statements and finds each state`, async () => {
    const ids = (await edb.rows<{ id: unknown }>('SELECT id FROM async_task ORDER BY id')).map((r) =>
      Number(r.id),
    );
    const rows = await store.tasks.selectWholeRows(db, source, ids, false);
    let statements = 0;
    const counting: Queryable = {
      query: (sql, params) => {
        statements++;
        return db.query(sql, params);
      },
      execute: (sql, params) => db.execute(sql, params),
    };
    const checker = effectChecker(source, {
      rules: [
        { name: 'coupon-issued', bizType: 'coupon', business: { table: 'user_coupon', key: 'order_id' } },
      ],
      sourceDsn: edb.dsn,
      openExtra: () => Promise.reject(new Error('no other database')),
    });
    const effects = await checker.check(rows, counting);
    // Two lookups per 500 keys: 2 × ⌈2,400 / 500⌉ = 10, not one per task.
    expect(statements).toBe(2 * Math.ceil(TASKS / 500));
    const states = new Map<string, number>();
    ids.forEach((id, i) => {
      const state = effects.get(String(id))?.state as string;
      expect(state, `task o-${i + 1}`).toBe(expected(i + 1));
      states.set(state, (states.get(state) ?? 0) + 1);
    });
    expect(states.get('duplicated')).toBe(TASKS / 5);
  });
});
