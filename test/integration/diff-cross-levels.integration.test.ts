import Database from 'better-sqlite3';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HASH_SPACE } from '../../src/core/diff-keys.js';
import { MAX_FANOUT } from '../../src/core/diff-levels.js';
import { runCli } from '../support/cli.js';
import { diffWithFindings, findingKeys, type DiffJson } from '../support/diff-json.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

/**
 * Cross-server diffs of tables too large to read row by row at once (more rows than one row-level
 * batch of each side): the whole-table digests differ, the hash space is split, and only the
 * segments that still differ are read. The split is dense (hashes streamed and counted in the
 * client) when both sides are MariaDB and the rule has no `where`, grouped by the server when it
 * has one, and counted in the client from SQLite. Each way must find exactly the planted sets.
 */
const N = 150_000;
const key = (seq: number) => `k${String(seq).padStart(7, '0')}`;
const seqs = (residue: number, modulus: number) =>
  Array.from({ length: N }, (_, i) => i + 1).filter((s) => s % modulus === residue);

// Residues of seq that plant each finding (3750 divides 7500, so none overlap).
const MISSING = seqs(1, 3750); // done task, no business row
const DUPLICATE = seqs(2, 3750); // done task, two business rows
const UNSETTLED = seqs(3, 7500); // failed task whose effect is there
// seq % 7500 = 4: the business key in upper case, equal under utf8mb4_general_ci; = 5: with a
// trailing space, equal under PAD SPACE. Neither is a finding.
const ORPHANS = Array.from({ length: 40 }, (_, i) => `orphan-${String(i).padStart(2, '0')}`);

const EXPECTED = [
  ...MISSING.map((s) => `missing:${key(s)}`),
  ...DUPLICATE.map((s) => `duplicate:${key(s)}`),
  ...UNSETTLED.map((s) => `unsettled:${key(s)}`),
  ...ORPHANS.map((k) => `orphan:${k}×1`),
].sort();

let tasksDb: TestSchema;
let businessDb: TestSchema;
let dir: string;
let sqliteFile: string;

beforeAll(async () => {
  tasksDb = await createTestSchema('diff_levels');
  businessDb = await createTestSchema('diff_levels_b');
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-levels-'));
  sqliteFile = join(dir, 'tasks.sqlite');
  expect((await runCli(['init', '--db', tasksDb.dsn])).code).toBe(0);
  expect((await runCli(['init', '--db', `sqlite:${sqliteFile}`])).code).toBe(0);
  await tasksDb.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status)
     SELECT 'coupon', CONCAT('k', LPAD(seq, 7, '0')), CONCAT('e', seq), IF(seq % 7500 = 3, 3, 2) FROM seq_1_to_${N}`,
  );
  await businessDb.sql.query(`CREATE TABLE user_coupon (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    order_id VARCHAR(64) NOT NULL,
    amount INT NOT NULL DEFAULT 10,
    KEY idx_order (order_id)
  ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci`);
  await businessDb.sql.query(
    `INSERT INTO user_coupon (order_id)
     SELECT CASE WHEN seq % 7500 = 4 THEN CONCAT('K', LPAD(seq, 7, '0'))
                 WHEN seq % 7500 = 5 THEN CONCAT('k', LPAD(seq, 7, '0'), ' ')
                 ELSE CONCAT('k', LPAD(seq, 7, '0')) END
       FROM seq_1_to_${N} WHERE seq % 3750 <> 1
     UNION ALL SELECT CONCAT('k', LPAD(seq, 7, '0')) FROM seq_1_to_${N} WHERE seq % 3750 = 2`,
  );
  await businessDb.sql.query(
    `INSERT INTO user_coupon (order_id) VALUES ${ORPHANS.map((k) => `('${k}')`).join(', ')}`,
  );
  const lite = new Database(sqliteFile);
  const insert = lite.prepare(
    'INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES (?, ?, ?, ?)',
  );
  lite.transaction(() => {
    for (let s = 1; s <= N; s++) insert.run('coupon', key(s), `e${s}`, s % 7500 === 3 ? 3 : 2);
  })();
  lite.close();
}, 120_000);

afterAll(async () => {
  await tasksDb?.drop();
  await businessDb?.drop();
});

interface LevelsJson extends DiffJson {
  rules: Array<DiffJson['rules'][number] & { checksum: Array<{ width: number; mismatched: number }> }>;
}

async function diff(taskDb: string, where?: string): Promise<LevelsJson> {
  const file = join(dir, `levels-${Math.random().toString(36).slice(2)}.yaml`);
  const filter = where ? `, where: "${where}"` : '';
  writeFileSync(
    file,
    `db: ${taskDb}\nrules:\n  - { name: levels, bizType: coupon, business: { table: user_coupon, key: order_id, db: "${businessDb.dsn}"${filter} } }\n`,
  );
  return diffWithFindings<LevelsJson>(['--config', file, '--samples', '1000'], { timeoutMs: 120_000 });
}

describe('cross-server diff of tables larger than a row-level batch', () => {
  it('MariaDB to MariaDB: a dense split, finer than a GROUP BY would go, finds exactly the planted sets', async () => {
    const json = await diff(tasksDb.dsn);
    expect(findingKeys(json, 'levels')).toEqual(EXPECTED);
    const [whole, split] = json.rules[0]?.checksum ?? [];
    expect(whole?.mismatched).toBe(1);
    expect(split?.width).toBeLessThan(HASH_SPACE / MAX_FANOUT);
    // Only segments holding a finding differ: the upper-case and padded keys hash as their normal form.
    expect(split?.mismatched).toBeLessThanOrEqual(EXPECTED.length);
    expect(json.rules[0]?.tasksChecked).toBe(N);
  }, 120_000);

  it("with a business where: the server groups the split (the rule's SQL never leaves the read-only transaction)", async () => {
    const json = await diff(tasksDb.dsn, 'amount > 0');
    expect(findingKeys(json, 'levels')).toEqual(EXPECTED);
    const split = json.rules[0]?.checksum[1];
    expect(split?.width).toBeGreaterThanOrEqual(HASH_SPACE / MAX_FANOUT);
  }, 120_000);

  it('SQLite tasks against MariaDB: the client counts the split from the task rows', async () => {
    const json = await diff(`sqlite:${sqliteFile}`);
    expect(findingKeys(json, 'levels')).toEqual(EXPECTED);
    expect(json.rules[0]?.checksum.length).toBeGreaterThan(1);
  }, 120_000);
});
