import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb, type TestEngine } from '../support/engine-db.js';
import { diffWithFindings, findingKeys, type DiffJson } from '../support/diff-json.js';

/**
 * The keys that break naive reconciliations: findings on both sides of a chunk boundary, ids
 * with a gap of billions, NULL keys, keys that differ only by case or trailing spaces under the
 * column's collation (MariaDB's; PostgreSQL and SQLite compare byte-wise), and a varchar biz_id
 * against an integer business key. Each is checked on every engine, on one server (the database
 * joins or merges) and across two databases of that engine (digests and normal forms compared):
 * both must give the same sets.
 */
const GAP_ID = 5_000_000_000;

/** The business tables whose key compares as a collation does, by engine: [table, key column]. */
const COLLATED_TABLES: Record<TestEngine, Array<[string, string]>> = {
  mysql: [
    ['coupon_ci', 'order_id VARCHAR(64) COLLATE utf8mb4_general_ci NOT NULL'],
    ['coupon_bin', 'order_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL'],
    ['coupon_nopad', 'order_id VARCHAR(64) COLLATE utf8mb4_nopad_bin NOT NULL'],
  ],
  postgres: [
    ['coupon_nopad', 'order_id varchar(64) NOT NULL'],
    ['coupon_c', 'order_id varchar(64) COLLATE "C" NOT NULL'],
  ],
  sqlite: [['coupon_nopad', 'order_id VARCHAR(64) NOT NULL']],
};

const businessTables = (engine: TestEngine): Array<[string, string]> => [
  ['coupon_edge', 'order_id VARCHAR(64) NULL'],
  ...COLLATED_TABLES[engine],
  ['coupon_int', 'order_id BIGINT NOT NULL'],
];

/** The task table as `init` writes it, with a biz_id that may be NULL. */
async function createTaskTable(db: EngineDb): Promise<void> {
  const printed = await runCli(['init', '--print', '--db', db.dsn]);
  expect(printed.code, printed.stderr).toBe(0);
  for (const statement of printed.stdout.split(/;\s*\n/)) {
    if (statement.trim() === '') continue;
    await db.run(statement.replace(/biz_id VARCHAR\(64\) NOT NULL/i, 'biz_id VARCHAR(64) NULL'));
  }
}

const seqKeys = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `k${String(from + i).padStart(4, '0')}`);

async function seedTasks(db: EngineDb): Promise<void> {
  await createTaskTable(db);
  // edge: ids 1..1100 (k0000..k1099); the first chunk is ids 1..1000, so 1000 and 1001 straddle its end.
  const columns = ['id', 'biz_type', 'biz_id', 'event_id', 'status'];
  await db.insertRows(
    'async_task',
    columns,
    seqKeys(0, 1099).map((k, i) => [i + 1, 'edge', k, `edge-${i}`, 2]),
  );
  await db.insertRows('async_task', columns, [
    [GAP_ID, 'edge', 'far-1', 'far-1', 2],
    [GAP_ID + 1, 'edge', 'far-2', 'far-2', 2],
    [GAP_ID + 2, 'edge', null, 'null-key', 2],
    [GAP_ID + 10, 'case', 'mixed-CASE', 'c1', 2],
    [GAP_ID + 11, 'case', 'Trail', 'c2', 2],
    [GAP_ID + 12, 'case', 'exact', 'c3', 2],
    [GAP_ID + 20, 'int', '42', 'i1', 2],
    [GAP_ID + 21, 'int', '042', 'i2', 2],
    [GAP_ID + 22, 'int', 'abc', 'i3', 2],
    [GAP_ID + 23, 'int', '7', 'i4', 2],
  ]);
}

async function seedBusiness(db: EngineDb): Promise<void> {
  for (const [table, column] of businessTables(db.engine)) {
    await db.run(`CREATE TABLE ${table} (id ${db.autoId}, ${column})`);
    await db.run(`CREATE INDEX idx_${table}_order ON ${table} (order_id)`);
  }
  await db.insertRows(
    'coupon_edge',
    ['order_id'],
    seqKeys(0, 1099)
      .filter((k) => k !== 'k0999' && k !== 'k1000')
      .map((k) => [k]),
  );
  // The orphan walk's first chunk ends at the 1000th key (far-2, k0000 … k0998): k0998z lies just after it.
  await db.insertRows(
    'coupon_edge',
    ['order_id'],
    [['k1001'], ['far-2'], [null], [null], ['k0998z'], ['k1001z']],
  );
  for (const [table] of COLLATED_TABLES[db.engine]) {
    await db.insertRows(table, ['order_id'], [['MIXED-case'], ['Trail   '], ['exact']]);
  }
  await db.insertRows('coupon_int', ['order_id'], [[42], [0], [7], [7]]);
}

const dbs: Partial<Record<TestEngine, { tasks: EngineDb; other: EngineDb }>> = {};
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-diffkeys-'));
  for (const engine of TEST_ENGINES) {
    const [tasks, other] = [
      await createEngineDb(engine, 'diff_keys'),
      await createEngineDb(engine, 'diff_keys_b'),
    ];
    dbs[engine] = { tasks, other };
    await seedTasks(tasks);
    await seedBusiness(tasks);
    await seedBusiness(other);
  }
}, 120_000);

afterAll(async () => {
  for (const pair of Object.values(dbs)) {
    await pair?.tasks.drop();
    await pair?.other.drop();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The rules of an engine: [name, biz type, business table]. */
const rulesOf = (engine: TestEngine): Array<[string, string, string]> => [
  ['edge', 'edge', 'coupon_edge'],
  ...COLLATED_TABLES[engine].map(([table]): [string, string, string] => [
    table.replace('coupon_', ''),
    'case',
    table,
  ]),
  ['int', 'int', 'coupon_int'],
];

/** Findings as "kind:key" (orphans with their row count), sorted. */
const EXPECTED: Record<string, string[]> = {
  edge: [
    'duplicate:k1001',
    'missing:far-1',
    'missing:k0999',
    'missing:k1000',
    'missing:null',
    'orphan:k0998z×1',
    'orphan:k1001z×1',
    'orphan:null×2',
  ],
  // utf8mb4_general_ci: case and trailing spaces do not matter.
  ci: [],
  // utf8mb4_bin is case-sensitive but PAD SPACE: 'Trail' still matches 'Trail   '.
  bin: ['missing:mixed-CASE', 'orphan:MIXED-case×1'],
  // NO PAD (and byte-wise, as PostgreSQL and SQLite compare): trailing spaces count too.
  nopad: ['missing:Trail', 'missing:mixed-CASE', 'orphan:MIXED-case×1', 'orphan:Trail   ×1'],
  c: ['missing:Trail', 'missing:mixed-CASE', 'orphan:MIXED-case×1', 'orphan:Trail   ×1'],
  // '42' = 42; '042' and 'abc' match nothing (not 42, not 0); 7 has two rows; 0 has no task.
  int: ['duplicate:7', 'missing:042', 'missing:abc', 'orphan:0×1'],
};

function configFor(engine: TestEngine, cross: boolean): string {
  const pair = dbs[engine] as { tasks: EngineDb; other: EngineDb };
  const file = join(dir, `${engine}-${cross ? 'cross' : 'same'}.yaml`);
  const rules = rulesOf(engine)
    .map(
      ([name, bizType, table]) =>
        `  - { name: ${name}, bizType: ${bizType}, business: { table: ${table}, key: order_id${cross ? `, db: "${pair.other.dsn}"` : ''} } }`,
    )
    .join('\n');
  writeFileSync(file, `db: ${pair.tasks.dsn}\nrules:\n${rules}\n`);
  return file;
}

describe.each(
  TEST_ENGINES.flatMap((engine) => [
    [engine, 'on one server', false],
    [engine, 'across two databases', true],
  ]) as Array<[TestEngine, string, boolean]>,
)('diff key edge cases on %s, %s', (engine, _label, cross) => {
  let json: DiffJson;
  beforeAll(async () => {
    json = await diffWithFindings([
      '--config',
      configFor(engine, cross),
      '--samples',
      '50',
      '--chunk-time',
      '1ms',
    ]);
    expect(json.rules.every((r) => r.mode === (cross ? 'cross-server' : 'same-server'))).toBe(true);
  });
  it('finds what lies on both sides of a chunk boundary, past a gap of billions of ids, and NULL keys', () => {
    expect(findingKeys(json, 'edge')).toEqual(EXPECTED.edge);
    const missing = json.rules
      .find((r) => r.name === 'edge')
      ?.samples.filter((s) => s.kind === 'missing')
      .map((s) => s.taskId);
    expect(missing?.sort((a, b) => Number(a) - Number(b))).toEqual([1000, 1001, GAP_ID, GAP_ID + 2]);
  });

  it('compares strings as the business column’s collation does (case, trailing spaces)', () => {
    for (const [table] of COLLATED_TABLES[engine]) {
      const name = table.replace('coupon_', '');
      expect(findingKeys(json, name), name).toEqual(EXPECTED[name]);
    }
  });

  it('counts every task it checked, and with --until before them checks none, while orphans stay orphans', async () => {
    expect(json.rules.find((r) => r.name === 'edge')?.tasksChecked).toBe(1103);
    const early = await runJson<DiffJson>([
      'diff',
      '--config',
      configFor(engine, cross),
      '--rule',
      'edge',
      '--until',
      '2000-01-01T00:00:00Z',
      '--samples',
      '50',
    ]);
    const edge = early.json.rules[0];
    expect(edge?.tasksChecked).toBe(0);
    expect(findingKeys(early.json, 'edge')).toEqual(['orphan:k0998z×1', 'orphan:k1001z×1', 'orphan:null×2']);
  });

  it("matches a varchar biz_id to an integer key only by the integer's own text", () => {
    expect(findingKeys(json, 'int')).toEqual(EXPECTED.int);
  });
});
