import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb, type TestEngine } from '../support/engine-db.js';
import { diffWithFindings, findingKeys, type DiffJson } from '../support/diff-json.js';

/**
 * The merge walk (both key indexes read in weight order and compared in the client: MariaDB's
 * collation weights, PostgreSQL's bytes) against the join walk (the server's LEFT JOIN
 * anti-joins, which a business `where` selects): on keys of one collation on both sides — PAD
 * SPACE and case-insensitive, PAD SPACE and case-sensitive, NO PAD on MariaDB; byte-wise on
 * PostgreSQL (its default collation and "C") — both must find exactly the planted sets, through
 * many small chunks. SQLite cannot merge: it joins, with the same byte-wise answer. Among the
 * keys: trailing spaces, a tab (which sorts before the padding spaces, so the client sees it out
 * of weight order on MariaDB), two business rows of one key that differ only by a trailing space,
 * non-ASCII keys, and ranges where a missing key and an orphan keep the row counts equal. Integer
 * keys (the task id against a BIGINT column) merge on PostgreSQL with the join's findings.
 */

/** Done tasks k0000…k2999, and business rows for them with planted differences. */
const BULK = {
  missing: ['k0500', 'k1500'],
  duplicate: ['k0700', 'k2100'],
  orphans: ['k1234x', 'k2999z'],
};
const BULK_KEYS = Array.from({ length: 3000 }, (_, i) => `k${String(i).padStart(4, '0')}`);

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
  ['straße', 2],
  ['é-1', 2],
];
const SPECIAL_ROWS = ['a ', 'b', 'd', 'd ', 'mIXED', 'u1', 'two', 'straße', 'è-1'];

const bulk = (kind: string, keys: string[]) => keys.map((k) => `${kind}:${k}`);
const COMMON = [
  ...bulk('missing', BULK.missing),
  ...bulk('duplicate', BULK.duplicate),
  ...BULK.orphans.map((k) => `orphan:${k}×1`),
  'missing:b\t',
  'orphan:b×1',
  'unsettled:u1',
];
// Byte-wise: 'a' and 'a ' are different keys, and so are 'd' and 'd '; case and accents count.
const BYTEWISE = [
  ...COMMON,
  'missing:a',
  'orphan:a ×1',
  'orphan:d ×1',
  'missing:Mixed',
  'orphan:mIXED×1',
  'missing:é-1',
  'orphan:è-1×1',
];

interface Case {
  /** The key columns' collation, as the engine writes it (null: the engine's default). */
  collation: string | null;
  expected: string[];
  /** The walk `auto` picks for the rule without a where. */
  walk: 'merge' | 'join';
}

const CASES: Record<TestEngine, Case[]> = {
  mysql: [
    // Case, accents and trailing spaces do not count: 'a' meets 'a ', 'Mixed' meets 'mIXED', 'd' has two rows.
    { collation: 'utf8mb4_general_ci', expected: [...COMMON, 'duplicate:d'], walk: 'merge' },
    // Case and accents count, trailing spaces do not.
    {
      collation: 'utf8mb4_bin',
      expected: [...COMMON, 'duplicate:d', 'missing:Mixed', 'orphan:mIXED×1', 'missing:é-1', 'orphan:è-1×1'],
      walk: 'merge',
    },
    { collation: 'utf8mb4_nopad_bin', expected: BYTEWISE, walk: 'merge' },
  ],
  postgres: [
    { collation: null, expected: BYTEWISE, walk: 'merge' },
    { collation: '"C"', expected: BYTEWISE, walk: 'merge' },
  ],
  sqlite: [{ collation: null, expected: BYTEWISE, walk: 'join' }],
};

/** The task key column and the business key column in `collation`. */
function keyColumnDdl(engine: TestEngine, collation: string | null): { task?: string; business: string } {
  if (engine === 'mysql') {
    return {
      task: `ALTER TABLE async_task MODIFY biz_id VARCHAR(64) COLLATE ${collation} NOT NULL`,
      business: `order_id VARCHAR(64) COLLATE ${collation} NOT NULL`,
    };
  }
  if (engine === 'postgres' && collation) {
    return {
      task: `ALTER TABLE async_task ALTER COLUMN biz_id TYPE varchar(64) COLLATE ${collation}`,
      business: `order_id varchar(64) COLLATE ${collation} NOT NULL`,
    };
  }
  return { business: 'order_id VARCHAR(64) NOT NULL' };
}

async function seed(db: EngineDb, collation: string | null): Promise<void> {
  const ddl = keyColumnDdl(db.engine, collation);
  await db.run('DELETE FROM async_task');
  if (ddl.task) await db.run(ddl.task);
  for (const table of ['coupon', 'coupon_int']) await db.run(`DROP TABLE IF EXISTS ${table}`);
  await db.run(`CREATE TABLE coupon (id ${db.autoId}, ${ddl.business})`);
  await db.run('CREATE INDEX idx_coupon_order ON coupon (order_id)');
  const tasks: unknown[][] = [
    ...BULK_KEYS.map((k, i) => ['coupon', k, `e${i}`, 2]),
    ...SPECIAL_TASKS.map(([k, status], i) => ['coupon', k, `s${i}`, status]),
    // The orphan key of another biz type's task is still an orphan of this rule.
    ['points', 'k1234x', 'other', 2],
  ];
  await db.insertRows('async_task', ['biz_type', 'biz_id', 'event_id', 'status'], tasks);
  const rows = [
    ...BULK_KEYS.filter((k) => !BULK.missing.includes(k)),
    ...BULK.duplicate,
    ...BULK.orphans,
    ...SPECIAL_ROWS,
  ];
  await db.insertRows(
    'coupon',
    ['order_id'],
    rows.map((k) => [k]),
  );
  // Integer keys: the coupon tasks' ids, but two, twice one of them, and two ids no task has.
  // The merge walk reads the tasks' keys from a (biz type, key) index: here the key is the id.
  await db.run('DROP INDEX IF EXISTS idx_task_type_id' + (db.engine === 'mysql' ? ' ON async_task' : ''));
  await db.run('CREATE INDEX idx_task_type_id ON async_task (biz_type, id)');
  await db.run(`CREATE TABLE coupon_int (id ${db.autoId}, order_id BIGINT NOT NULL)`);
  await db.run('CREATE INDEX idx_coupon_int_order ON coupon_int (order_id)');
  const ids = (
    await db.rows<{ id: number }>(`SELECT id FROM async_task WHERE biz_type = 'coupon' ORDER BY id`)
  ).map((r) => Number(r.id));
  const intRows = [...ids.filter((_, i) => i !== 10 && i !== 2000), ids[20], 900_000_001, 900_000_002];
  await db.insertRows(
    'coupon_int',
    ['order_id'],
    intRows.map((id) => [id]),
  );
}

/** The same rules twice: as they are (merged where the engine can), and with a business where (joined). */
function config(dir: string, db: EngineDb): string {
  const file = join(dir, 'rules.yaml');
  writeFileSync(
    file,
    `db: ${db.dsn}
rules:
  - { name: merged, bizType: coupon, business: { table: coupon, key: order_id } }
  - { name: joined, bizType: coupon, business: { table: coupon, key: order_id, where: "1=1" } }
  - { name: ints, bizType: coupon, taskKey: id, business: { table: coupon_int, key: order_id } }
  - { name: intsJoined, bizType: coupon, taskKey: id, business: { table: coupon_int, key: order_id, where: "1=1" } }
`,
  );
  return file;
}

describe.each(TEST_ENGINES)('diff on one server, %s', (engine) => {
  let db: EngineDb;
  let dir: string;
  beforeAll(async () => {
    db = await createEngineDb(engine, 'diff_merge');
    dir = mkdtempSync(join(tmpdir(), 'taskrecon-diffmerge-'));
    const init = await runCli(['init', '--db', db.dsn]);
    expect(init.code, init.stderr).toBe(0);
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe.each(CASES[engine])('keys in $collation', ({ collation, expected, walk }) => {
    let json: DiffJson;
    beforeAll(async () => {
      await seed(db, collation);
      json = await diffWithFindings(['--config', config(dir, db), '--samples', '100', '--chunk-time', '1ms']);
    });

    it(`walks the rule without a where by ${walk}, and joins the rule with one`, () => {
      expect(json.rules.map((r) => [r.name, r.walk]).slice(0, 2)).toEqual([
        ['merged', walk],
        ['joined', 'join'],
      ]);
    });

    it('finds exactly the planted sets both ways', () => {
      const sorted = [...expected].sort();
      expect(findingKeys(json, 'merged')).toEqual(sorted);
      expect(findingKeys(json, 'joined')).toEqual(sorted);
    });

    it('counts the same tasks both ways', () => {
      const counts = json.rules.slice(0, 2).map((r) => r.tasksChecked);
      expect(counts).toEqual([3000 + SPECIAL_TASKS.length, 3000 + SPECIAL_TASKS.length]);
    });

    it('gives integer keys the findings of the join walk (two missing, a duplicate, two orphans)', () => {
      const ints = findingKeys(json, 'ints');
      expect(ints).toEqual(findingKeys(json, 'intsJoined'));
      expect(ints.filter((f) => f.startsWith('missing:'))).toHaveLength(2);
      expect(ints.filter((f) => f.startsWith('duplicate:'))).toHaveLength(1);
      expect(ints.filter((f) => f.startsWith('orphan:'))).toEqual([
        'orphan:900000001×1',
        'orphan:900000002×1',
      ]);
      // Integer keys merge where keys compare byte-wise (PostgreSQL); MariaDB merges text keys only.
      const intWalk = json.rules.find((r) => r.name === 'ints')?.walk;
      expect(intWalk).toBe(engine === 'postgres' ? 'merge' : 'join');
    });
  });

  describe('diff --walk', () => {
    let file: string;
    beforeAll(async () => {
      await seed(db, CASES[engine][0]?.collation ?? null);
      file = config(dir, db);
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
      expect(findingKeys(run.json, 'merged')).toEqual([...(CASES[engine][0]?.expected ?? [])].sort());
    });

    it('refuses merge for a rule that cannot, saying why, with exit 3', async () => {
      const rule = engine === 'sqlite' ? 'merged' : 'joined';
      const run = await runCli(['diff', '--config', file, '--rule', rule, '--walk', 'merge']);
      expect(run.code).toBe(3);
      expect(run.stderr).toContain(`rule '${rule}': cannot merge the key indexes: `);
      expect(run.stderr).toContain(
        engine === 'sqlite'
          ? 'give keys in an order the client can compare'
          : 'the rule has a business where',
      );
      expect(run.stderr).toContain('--walk join');
    });
  });
});
