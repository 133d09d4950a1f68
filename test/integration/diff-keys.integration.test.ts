import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { diffWithFindings, findingKeys, type DiffJson } from '../support/diff-json.js';

/**
 * The keys that break naive reconciliations: findings on both sides of a chunk boundary, ids
 * with a gap of billions, NULL keys, keys that differ only by case or trailing spaces under the
 * column's collation, and a varchar biz_id against an integer business key. Each is checked on
 * one server (the database joins) and across two databases (the client compares normal forms):
 * both must give the same sets.
 */
let db: TestSchema;
let other: TestSchema;
let dir: string;

const GAP_ID = 5_000_000_000;

const BUSINESS_TABLES: Array<[string, string]> = [
  ['coupon_edge', 'order_id VARCHAR(64) NULL'],
  ['coupon_ci', 'order_id VARCHAR(64) COLLATE utf8mb4_general_ci NOT NULL'],
  ['coupon_bin', 'order_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL'],
  ['coupon_nopad', 'order_id VARCHAR(64) COLLATE utf8mb4_nopad_bin NOT NULL'],
  ['coupon_int', 'order_id BIGINT NOT NULL'],
];

beforeAll(async () => {
  db = await createTestSchema('diff_keys');
  other = await createTestSchema('diff_keys_b');
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-diffkeys-'));
  expect((await runCli(['init', '--db', db.dsn])).code).toBe(0);
  await db.sql.query(`ALTER TABLE async_task MODIFY biz_id VARCHAR(64) NULL`);
  // edge: ids 1..1100 (k0000..k1099); the first chunk is ids 1..1000, so 1000 and 1001 straddle its end.
  await db.sql.query(
    `INSERT INTO async_task (id, biz_type, biz_id, event_id, status)
     SELECT seq + 1, 'edge', CONCAT('k', LPAD(seq, 4, '0')), CONCAT('edge-', seq), 2 FROM seq_0_to_1099`,
  );
  await db.sql.query(
    `INSERT INTO async_task (id, biz_type, biz_id, event_id, status) VALUES
     (${GAP_ID}, 'edge', 'far-1', 'far-1', 2), (${GAP_ID + 1}, 'edge', 'far-2', 'far-2', 2), (${GAP_ID + 2}, 'edge', NULL, 'null-key', 2),
     (${GAP_ID + 10}, 'case', 'mixed-CASE', 'c1', 2), (${GAP_ID + 11}, 'case', 'Trail', 'c2', 2), (${GAP_ID + 12}, 'case', 'exact', 'c3', 2),
     (${GAP_ID + 20}, 'int', '42', 'i1', 2), (${GAP_ID + 21}, 'int', '042', 'i2', 2), (${GAP_ID + 22}, 'int', 'abc', 'i3', 2), (${GAP_ID + 23}, 'int', '7', 'i4', 2)`,
  );
  for (const s of [db, other]) {
    for (const [table, column] of BUSINESS_TABLES) {
      await s.sql.query(
        `CREATE TABLE ${table} (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, ${column}, KEY idx_order (order_id)) DEFAULT CHARSET=utf8mb4`,
      );
    }
    await s.sql.query(
      `INSERT INTO coupon_edge (order_id) SELECT CONCAT('k', LPAD(seq, 4, '0')) FROM seq_0_to_1099 WHERE seq NOT IN (999, 1000)`,
    );
    // The orphan walk's first chunk ends at the 1000th key (far-2, k0000 … k0998): k0998z lies just after it.
    await s.sql.query(
      `INSERT INTO coupon_edge (order_id) VALUES ('k1001'), ('far-2'), (NULL), (NULL), ('k0998z'), ('k1001z')`,
    );
    for (const table of ['coupon_ci', 'coupon_bin', 'coupon_nopad']) {
      await s.sql.query(`INSERT INTO ${table} (order_id) VALUES ('MIXED-case'), ('Trail   '), ('exact')`);
    }
    await s.sql.query(`INSERT INTO coupon_int (order_id) VALUES (42), (0), (7), (7)`);
  }
});

afterAll(async () => {
  await db?.drop();
  await other?.drop();
});

const RULES: Array<[string, string, string]> = [
  ['edge', 'edge', 'coupon_edge'],
  ['ci', 'case', 'coupon_ci'],
  ['bin', 'case', 'coupon_bin'],
  ['nopad', 'case', 'coupon_nopad'],
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
  // NO PAD: trailing spaces count too.
  nopad: ['missing:Trail', 'missing:mixed-CASE', 'orphan:MIXED-case×1', 'orphan:Trail   ×1'],
  // '42' = 42; '042' and 'abc' match nothing (not 42, not 0); 7 has two rows; 0 has no task.
  int: ['duplicate:7', 'missing:042', 'missing:abc', 'orphan:0×1'],
};

function configFor(cross: boolean): string {
  const file = join(dir, cross ? 'cross.yaml' : 'same.yaml');
  const rules = RULES.map(
    ([name, bizType, table]) =>
      `  - { name: ${name}, bizType: ${bizType}, business: { table: ${table}, key: order_id${cross ? `, db: "${other.dsn}"` : ''} } }`,
  ).join('\n');
  writeFileSync(file, `db: ${db.dsn}\nrules:\n${rules}\n`);
  return file;
}

describe.each([
  ['on one server', false],
  ['across two databases', true],
])('diff key edge cases %s', (_label, cross) => {
  let json: DiffJson;
  beforeAll(async () => {
    json = await diffWithFindings(['--config', configFor(cross), '--samples', '50', '--chunk-time', '1ms']);
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
    expect(findingKeys(json, 'ci')).toEqual(EXPECTED.ci);
    expect(findingKeys(json, 'bin')).toEqual(EXPECTED.bin);
    expect(findingKeys(json, 'nopad')).toEqual(EXPECTED.nopad);
  });

  it('counts every task it checked, and with --until before them checks none, while orphans stay orphans', async () => {
    expect(json.rules.find((r) => r.name === 'edge')?.tasksChecked).toBe(1103);
    const early = await runJson<DiffJson>([
      'diff',
      '--config',
      configFor(cross),
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
