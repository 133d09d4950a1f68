import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { diffWithFindings, findingKeys, type DiffJson } from '../support/diff-json.js';

/**
 * The merge walk (both key indexes read in key order and compared by collation weight in the
 * client) against the join walk (the server's LEFT JOIN anti-joins, which a business `where`
 * selects): on keys of one collation on both sides — PAD SPACE and case-insensitive, PAD SPACE
 * and case-sensitive, NO PAD — both must find exactly the planted sets, through many small
 * chunks. Among the keys: trailing spaces, a tab (which sorts before the padding spaces, so the
 * client sees it out of weight order), two business rows of one key that differ only by a
 * trailing space, and ranges where a missing key and an orphan keep the row counts equal.
 */
let db: TestSchema;
let dir: string;

/** Done tasks k0000…k2999, and business rows for them with planted differences. */
const BULK = {
  missing: ['k0500', 'k1500'],
  duplicate: ['k0700', 'k2100'],
  orphans: ['k1234x', 'k2999z'],
};

// Done (2) tasks with special keys; 'p1' is pending (0) and has no business row (not a finding);
// 'u1' is pending with a business row (unsettled); 'two' has two tasks and one row (no finding).
const SPECIAL_TASKS: Array<[string, number]> = [
  ['a', 2],
  ['b\t', 2],
  ['d', 2],
  ['Mixed', 2],
  ['p1', 0],
  ['u1', 0],
  ['two', 2],
  ['two', 2],
];
const SPECIAL_ROWS = ['a ', 'b', 'd', 'd ', 'mIXED', 'u1', 'two'];

const bulk = (kind: string, keys: string[]) => keys.map((k) => `${kind}:${k}`);
const COMMON = [
  ...bulk('missing', BULK.missing),
  ...bulk('duplicate', BULK.duplicate),
  ...BULK.orphans.map((k) => `orphan:${k}×1`),
  'missing:b\t',
  'orphan:b×1',
  'unsettled:u1',
];

const EXPECTED: Record<string, string[]> = {
  // Case and trailing spaces do not count: 'a' meets 'a ', 'Mixed' meets 'mIXED', 'd' has two rows.
  utf8mb4_general_ci: [...COMMON, 'duplicate:d'],
  // Case counts, trailing spaces do not.
  utf8mb4_bin: [...COMMON, 'duplicate:d', 'missing:Mixed', 'orphan:mIXED×1'],
  // Both count: 'a' and 'a ' are different keys, and so are 'd' and 'd '.
  utf8mb4_nopad_bin: [
    ...COMMON,
    'missing:a',
    'orphan:a ×1',
    'orphan:d ×1',
    'missing:Mixed',
    'orphan:mIXED×1',
  ],
};

beforeAll(async () => {
  db = await createTestSchema('diff_merge');
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-diffmerge-'));
  expect((await runCli(['init', '--db', db.dsn])).code).toBe(0);
});

afterAll(async () => {
  await db?.drop();
});

async function seed(collation: string): Promise<void> {
  await db.sql.query('DELETE FROM async_task');
  await db.sql.query(`ALTER TABLE async_task MODIFY biz_id VARCHAR(64) COLLATE ${collation} NOT NULL`);
  await db.sql.query('DROP TABLE IF EXISTS coupon');
  await db.sql.query(
    `CREATE TABLE coupon (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
       order_id VARCHAR(64) COLLATE ${collation} NOT NULL, KEY idx_order (order_id)) DEFAULT CHARSET=utf8mb4`,
  );
  await db.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status)
     SELECT 'coupon', CONCAT('k', LPAD(seq, 4, '0')), CONCAT('e', seq), 2 FROM seq_0_to_2999`,
  );
  let n = 0;
  for (const [key, status] of SPECIAL_TASKS) {
    await db.sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ('coupon', ?, ?, ?)`,
      [key, `s${n++}`, status],
    );
  }
  // The orphan key of another biz type's task is still an orphan of this rule.
  await db.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ('points', 'k1234x', 'other', 2)`,
  );
  const skip = BULK.missing.map((k) => `'${k}'`).join(', ');
  await db.sql.query(
    `INSERT INTO coupon (order_id) SELECT CONCAT('k', LPAD(seq, 4, '0')) FROM seq_0_to_2999
      WHERE CONCAT('k', LPAD(seq, 4, '0')) NOT IN (${skip})`,
  );
  for (const key of [...BULK.duplicate, ...BULK.orphans, ...SPECIAL_ROWS]) {
    await db.sql.query('INSERT INTO coupon (order_id) VALUES (?)', [key]);
  }
}

/** The same rule twice: as it is (merged), and with a business where (joined). */
function config(): string {
  const file = join(dir, 'rules.yaml');
  writeFileSync(
    file,
    `db: ${db.dsn}
rules:
  - { name: merged, bizType: coupon, business: { table: coupon, key: order_id } }
  - { name: joined, bizType: coupon, business: { table: coupon, key: order_id, where: "1=1" } }
`,
  );
  return file;
}

describe.each(Object.keys(EXPECTED))('diff on one server, keys in %s', (collation) => {
  let json: DiffJson;
  beforeAll(async () => {
    await seed(collation);
    const file = config();
    json = await diffWithFindings(['--config', file, '--samples', '100', '--chunk-time', '1ms']);
  });

  it('merges the key indexes when it can, and joins when the rule has a where', () => {
    expect(json.rules.map((r) => [r.name, r.walk])).toEqual([
      ['merged', 'merge'],
      ['joined', 'join'],
    ]);
  });

  it('finds exactly the planted sets both ways', () => {
    const expected = [...(EXPECTED[collation] ?? [])].sort();
    expect(findingKeys(json, 'merged')).toEqual(expected);
    expect(findingKeys(json, 'joined')).toEqual(expected);
  });

  it('counts the same tasks both ways', () => {
    const counts = json.rules.map((r) => r.tasksChecked);
    expect(counts).toEqual([3000 + SPECIAL_TASKS.length, 3000 + SPECIAL_TASKS.length]);
  });
});

describe('diff --walk', () => {
  let file: string;
  beforeAll(async () => {
    await seed('utf8mb4_general_ci');
    file = config();
  });

  it('join walks a rule that could merge, with the same findings', async () => {
    const run = await runJson<DiffJson>([
      'diff',
      '--config',
      file,
      '--rule',
      'merged',
      '--walk',
      'join',
      '--samples',
      '100',
    ]);
    expect(run.code, run.stderr).toBe(1);
    expect(run.json.rules[0]?.walk).toBe('join');
    expect(findingKeys(run.json, 'merged')).toEqual([...(EXPECTED.utf8mb4_general_ci ?? [])].sort());
  });

  it('refuses merge for a rule that cannot, saying why, with exit 3', async () => {
    const run = await runCli(['diff', '--config', file, '--rule', 'joined', '--walk', 'merge']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(
      "rule 'joined': cannot merge the key indexes: the rule has a business where",
    );
    expect(run.stderr).toContain('--walk join');
  });
});
