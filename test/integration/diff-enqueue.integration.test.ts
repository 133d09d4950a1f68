import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeRule } from '../../src/core/diff.js';
import { bindSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { profileFor } from '../../src/db/profiles/registry.js';
import { ruleIndexes } from '../../src/ops/rule-indexes.js';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * diff reads only: without --enqueue (and with --dry-run) a checksum of every table is unchanged,
 * and bad rules stop with exit 3 before anything is read. With --enqueue, each missing task goes
 * success → pending (due now) through the state machine, with one audit row per change.
 */
let db: TestSchema;
let dir: string;

async function checksums(): Promise<Record<string, string>> {
  const [rows] = (await db.sql.query(
    'CHECKSUM TABLE async_task, user_coupon, taskrecon_audit, sneaky_log EXTENDED',
  )) as unknown as [Array<{ Table: string; Checksum: string }>];
  return Object.fromEntries(rows.map((r) => [r.Table, String(r.Checksum)]));
}

function config(name: string, rules: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `db: ${db.dsn}\nappTimeZone: "+08:00"\nrules:\n${rules}\n`);
  return file;
}

const GOOD_RULE =
  '  - { name: coupon-issued, bizType: coupon, business: { table: user_coupon, key: order_id, where: "amount > 0" } }';

beforeAll(async () => {
  db = await createTestSchema('diff_enqueue', { timeZone: '+08:00' });
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-diffenq-'));
  expect((await runCli(['init', '--db', db.dsn])).code).toBe(0);
  await db.sql.query(
    `CREATE TABLE user_coupon (id INT AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(64) NOT NULL, amount INT NOT NULL, KEY (order_id))`,
  );
  await db.sql.query(`CREATE TABLE sneaky_log (id INT AUTO_INCREMENT PRIMARY KEY, at DATETIME)`);
  await db.sql.query(
    `CREATE FUNCTION sneaky() RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO sneaky_log (at) VALUES (NOW()); RETURN 1; END`,
  );
  await db.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time, updated_at) VALUES
     ('coupon', 'o-1', 'e-1', 2, NOW() - INTERVAL 1 DAY, NOW() - INTERVAL 1 DAY),
     ('coupon', 'o-2', 'e-2', 2, NOW() - INTERVAL 1 DAY, NOW() - INTERVAL 1 DAY),
     ('coupon', 'o-3', 'e-3', 2, NOW() - INTERVAL 1 DAY, NOW() - INTERVAL 1 DAY),
     ('coupon', 'o-4', 'e-4', 3, NOW() - INTERVAL 1 DAY, NOW() - INTERVAL 1 DAY)`,
  );
  // o-2 has only a zero-amount row, which the rule's where leaves out: it is missing too.
  await db.sql.query(
    `INSERT INTO user_coupon (order_id, amount) VALUES ('o-1', 10), ('o-2', 0), ('o-4', 10)`,
  );
});

afterAll(async () => {
  await db?.drop();
});

describe('diff writes nothing unless asked', () => {
  it('leaves every table byte for byte as it was, with and without --enqueue --dry-run', async () => {
    const before = await checksums();
    const file = config('good', GOOD_RULE);
    const plain = await runJson<{ total: Record<string, number> }>([
      'diff',
      '--config',
      file,
      '--samples',
      '20',
    ]);
    expect(plain.code).toBe(1);
    expect(plain.json.total).toEqual({ missing: 2, duplicate: 0, orphan: 0, unsettled: 1 });
    const dry = await runJson<{
      enqueue: { applied: number; dryRun: boolean; results: Array<{ outcome: string }> };
    }>(['diff', '--config', file, '--enqueue', '--dry-run']);
    assertMatchesSchema('diff', dry.json);
    expect(dry.json.enqueue).toMatchObject({ applied: 2, dryRun: true });
    expect(dry.json.enqueue.results.map((r) => r.outcome)).toEqual(['would-apply', 'would-apply']);
    expect(await checksums()).toEqual(before);
  });

  it.each([
    [
      'a missing business table',
      '{ table: user_coupons, key: order_id }',
      /business table 'user_coupons' does not exist/,
    ],
    [
      'a missing key column',
      '{ table: user_coupon, key: ordr_id }',
      /has no column 'ordr_id'.*|Did you mean 'order_id'/s,
    ],
    [
      'a where with ;',
      '{ table: user_coupon, key: order_id, where: "amount > 0; DELETE FROM user_coupon" }',
      /contains ';'/,
    ],
    [
      'an unknown expect mode',
      '{ table: user_coupon, key: order_id, expect: exactly-once }',
      /unknown expect mode 'exactly-once'/,
    ],
    [
      'a where on a column the table lacks',
      '{ table: user_coupon, key: order_id, where: "amout > 0" }',
      /business.where does not run/,
    ],
    [
      'a where that would write',
      '{ table: user_coupon, key: order_id, where: "sneaky() = 1" }',
      /READ ONLY/i,
    ],
  ])('refuses %s with exit 3, a clear message and nothing written', async (_label, business, message) => {
    const before = await checksums();
    const file = config('bad', `  - { name: bad, bizType: coupon, business: ${business} }`);
    const result = await runCli(['diff', '--config', file]);
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toContain("rule 'bad'");
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(await checksums()).toEqual(before);
  });

  it('warns, and does not fail, on a rule whose biz type has no tasks', async () => {
    const file = config(
      'empty',
      '  - { name: nobody, bizType: refund, business: { table: user_coupon, key: order_id } }',
    );
    const result = await runCli(['diff', '--config', file]);
    expect(result.code).toBe(1); // every business row is an orphan of that rule
    expect(result.stderr).toMatch(/warning.*no task of biz type 'refund'/);
    const json = await runJson<{ rules: Array<{ warnings: string[] }> }>(['diff', '--config', file]);
    expect(json.json.rules[0]?.warnings.join(' ')).toMatch(/no task of biz type 'refund'/);
  });

  it('names an unknown --rule with exit 3', async () => {
    const result = await runCli(['diff', '--config', config('good2', GOOD_RULE), '--rule', 'coupon-isued']);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/unknown rule 'coupon-isued'.*Did you mean 'coupon-issued'/s);
  });

  it('checks only the rules --rule names: a broken one elsewhere does not block them', async () => {
    const file = config(
      'mixed',
      `${GOOD_RULE}\n  - { name: broken, bizType: coupon, business: { table: nope, key: order_id } }`,
    );
    expect((await runCli(['diff', '--config', file])).code).toBe(3);
    expect((await runCli(['diff', '--config', file, '--rule', 'coupon-issued'])).code).toBe(1);
  });
});

describe('diff --enqueue', () => {
  it('requeues each missing task through the state machine with one audit row per change, business rows untouched', async () => {
    const businessBefore = (await checksums()).user_coupon;
    const file = config('enqueue', GOOD_RULE);
    const run = await runJson<{ enqueue: { applied: number; runId: string } }>(
      [
        'diff',
        '--config',
        file,
        '--enqueue',
        '--yes',
        '--operator',
        'ops@test',
        '--reason',
        'lost in outage',
      ],
      {
        env: { TZ: 'America/New_York' },
      },
    );
    expect(run.code).toBe(1);
    assertMatchesSchema('diff', run.json);
    expect(run.json.enqueue.applied).toBe(2);
    const [tasks] = (await db.sql.query(
      `SELECT biz_id, status, next_retry_time <= NOW() AS due, updated_at >= NOW() - INTERVAL 1 MINUTE AS touched FROM async_task ORDER BY id`,
    )) as unknown as [Array<{ biz_id: string; status: number; due: number; touched: number }>];
    expect(tasks.map((t) => [t.biz_id, t.status])).toEqual([
      ['o-1', 2],
      ['o-2', 0],
      ['o-3', 0],
      ['o-4', 3],
    ]);
    expect(tasks.filter((t) => t.status === 0).every((t) => t.due === 1 && t.touched === 1)).toBe(true);
    const [audit] = (await db.sql.query(
      `SELECT task_id, action, from_status, to_status, operator, reason, run_id, before_json, after_json FROM taskrecon_audit ORDER BY id`,
    )) as unknown as [Array<Record<string, string>>];
    expect(
      audit.map((a) => [a.task_id, a.action, a.from_status, a.to_status, a.operator, a.reason, a.run_id]),
    ).toEqual([
      ['2', 'requeue', 'success', 'pending', 'ops@test', 'lost in outage', run.json.enqueue.runId],
      ['3', 'requeue', 'success', 'pending', 'ops@test', 'lost in outage', run.json.enqueue.runId],
    ]);
    expect(JSON.parse(audit[0]?.before_json as string)).toMatchObject({ status: 2 });
    expect(JSON.parse(audit[0]?.after_json as string)).toMatchObject({ status: 0 });
    expect((await checksums()).user_coupon).toBe(businessBefore);
    // Requeued tasks are pending now: a second diff has nothing missing left to enqueue.
    const again = await runJson<{ total: { missing: number }; enqueue: { applied: number } }>([
      'diff',
      '--config',
      file,
      '--enqueue',
      '--yes',
    ]);
    expect(again.json.total.missing).toBe(0);
    expect(again.json.enqueue.applied).toBe(0);
  });
});

describe('ruleIndexes (for doctor)', () => {
  it('lists the indexes a rule reads through and says which are missing, with the DDL to add them', async () => {
    await db.sql.query(
      `CREATE TABLE points_log (id INT AUTO_INCREMENT PRIMARY KEY, order_ref VARCHAR(64) NOT NULL)`,
    );
    const conn = await connect(db.dsn);
    try {
      const source = await bindSource(conn, profileFor({ profile: 'async-task' }, 'sources.tasks'), 'tasks');
      const indexed = await ruleIndexes(
        conn,
        normalizeRule(
          { name: 'r', bizType: 'coupon', business: { table: 'user_coupon', key: 'order_id' } },
          0,
        ),
        source,
      );
      expect(indexed.map((n) => [n.side, n.columns.join(','), n.present])).toEqual([
        ['task', 'id', true],
        ['task', 'biz_type,biz_id', true],
        ['business', 'order_id', true],
      ]);
      const bare = await ruleIndexes(
        conn,
        { name: 'p', bizType: 'points', business: { table: 'points_log', key: 'order_ref' } },
        source,
      );
      expect(bare[2]).toMatchObject({
        side: 'business',
        present: false,
        index: null,
        suggestion: 'CREATE INDEX `idx_points_log_order_ref` ON `points_log` (`order_ref`)',
      });
    } finally {
      await conn.close();
    }
  });
});
