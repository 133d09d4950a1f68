import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HASH_SPACE } from '../../src/core/diff-keys.js';
import { MAX_FANOUT } from '../../src/core/diff-levels.js';
import { runCli } from '../support/cli.js';
import { diffWithFindings, findingKeys, type DiffJson } from '../support/diff-json.js';
import { createEngineDb, TEST_ENGINES, type EngineDb, type TestEngine } from '../support/engine-db.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

/**
 * Cross-server diffs of tables too large to read row by row at once (more rows than one row-level
 * batch of each side): the whole-table digests differ, the hash space is split, and only the
 * segments that still differ are read. The split is dense (hashes streamed and counted in the
 * client) when both sides are MariaDB and the rule has no `where`, grouped by the server when it
 * has one or a side is PostgreSQL (MD5 hashes then, on both servers), and counted in the client
 * from SQLite. Each way must find exactly the planted sets, as the business key's collation
 * compares keys (PostgreSQL's byte-wise).
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

let tasks: Partial<Record<TestEngine, EngineDb>> = {};
let businessDb: TestSchema;
let pgBusiness: PgTestDatabase;
let dir: string;

/** `N` tasks of biz type coupon, k0000001…, every 7500th (from 3) failed, in one statement. */
function seedSql(engine: TestEngine): string {
  const status = 'CASE WHEN seq % 7500 = 3 THEN 3 ELSE 2 END';
  const insert = 'INSERT INTO async_task (biz_type, biz_id, event_id, status)';
  switch (engine) {
    case 'mysql':
      return `${insert} SELECT 'coupon', CONCAT('k', LPAD(seq, 7, '0')), CONCAT('e', seq), ${status} FROM seq_1_to_${N}`;
    case 'postgres':
      return `${insert} SELECT 'coupon', 'k' || lpad(seq::text, 7, '0'), 'e' || seq, ${status} FROM generate_series(1, ${N}) AS g(seq)`;
    case 'sqlite':
      return `WITH RECURSIVE s(seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s WHERE seq < ${N})
        ${insert} SELECT 'coupon', 'k' || substr('0000000' || seq, -7), 'e' || seq, ${status} FROM s`;
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-levels-'));
  businessDb = await createTestSchema('diff_levels_b');
  pgBusiness = await createPgDatabase('diff_levels_b');
  for (const engine of TEST_ENGINES) {
    const db = await createEngineDb(engine, 'diff_levels');
    tasks[engine] = db;
    const init = await runCli(['init', '--db', db.dsn]);
    expect(init.code, init.stderr).toBe(0);
    await db.run(seedSql(engine));
  }
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
  // The same rows on PostgreSQL, whose keys compare byte-wise.
  await pgBusiness.sql
    .query(`CREATE TABLE user_coupon (id bigserial PRIMARY KEY, order_id varchar(64) NOT NULL,
    amount int NOT NULL DEFAULT 10);
    CREATE INDEX idx_order ON user_coupon (order_id)`);
  await pgBusiness.sql.query(
    `INSERT INTO user_coupon (order_id)
     SELECT CASE WHEN seq % 7500 = 4 THEN 'K' || lpad(seq::text, 7, '0')
                 WHEN seq % 7500 = 5 THEN 'k' || lpad(seq::text, 7, '0') || ' '
                 ELSE 'k' || lpad(seq::text, 7, '0') END
       FROM generate_series(1, ${N}) AS g(seq) WHERE seq % 3750 <> 1
     UNION ALL SELECT 'k' || lpad(seq::text, 7, '0') FROM generate_series(1, ${N}) AS g(seq) WHERE seq % 3750 = 2`,
  );
  await pgBusiness.sql.query(
    `INSERT INTO user_coupon (order_id) VALUES ${ORPHANS.map((k) => `('${k}')`).join(', ')}`,
  );
}, 300_000);

afterAll(async () => {
  for (const db of Object.values(tasks)) await db?.drop();
  tasks = {};
  await businessDb?.drop();
  await pgBusiness?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface LevelsJson extends DiffJson {
  rules: Array<DiffJson['rules'][number] & { checksum: Array<{ width: number; mismatched: number }> }>;
}

async function diff(taskDb: string, businessDsn: string, where?: string): Promise<LevelsJson> {
  const file = join(dir, `levels-${Math.random().toString(36).slice(2)}.yaml`);
  const filter = where ? `, where: "${where}"` : '';
  writeFileSync(
    file,
    `db: ${taskDb}\nrules:\n  - { name: levels, bizType: coupon, business: { table: user_coupon, key: order_id, db: "${businessDsn}"${filter} } }\n`,
  );
  return diffWithFindings<LevelsJson>(['--config', file, '--samples', '1000'], { timeoutMs: 120_000 });
}

const taskDsn = (engine: TestEngine) => (tasks[engine] as EngineDb).dsn;

/** Byte-wise, the upper-case and the padded business keys are orphans and their tasks missing. */
const BYTEWISE = [
  ...EXPECTED,
  ...seqs(4, 7500).flatMap((s) => [`missing:${key(s)}`, `orphan:K${key(s).slice(1)}×1`]),
  ...seqs(5, 7500).flatMap((s) => [`missing:${key(s)}`, `orphan:${key(s)} ×1`]),
].sort();

describe.each(TEST_ENGINES)(
  'cross-server diff of tables larger than a row-level batch: %s tasks',
  (engine) => {
    it('against MariaDB (utf8mb4_general_ci) finds exactly the planted sets, splitting the hash space', async () => {
      const json = await diff(taskDsn(engine), businessDb.dsn);
      expect(findingKeys(json, 'levels')).toEqual(EXPECTED);
      const [whole, split] = json.rules[0]?.checksum ?? [];
      expect(whole?.mismatched).toBe(1);
      expect(split).toBeDefined();
      if (engine === 'mysql') {
        // Dense: finer than a GROUP BY would go. Only segments holding a finding differ: the
        // upper-case and padded keys hash as their normal form.
        expect(split?.width).toBeLessThan(HASH_SPACE / MAX_FANOUT);
        expect(split?.mismatched).toBeLessThanOrEqual(EXPECTED.length);
      }
      expect(json.rules[0]?.tasksChecked).toBe(N);
    }, 120_000);

    it('against PostgreSQL (keys byte-wise) finds the planted sets and the case and space variants', async () => {
      const json = await diff(taskDsn(engine), pgBusiness.dsn);
      expect(findingKeys(json, 'levels')).toEqual(BYTEWISE);
      expect(json.rules[0]?.checksum.length).toBeGreaterThan(1);
    }, 120_000);
  },
);

describe('cross-server diff with a business where', () => {
  it("MariaDB tasks: the server groups the split (the rule's SQL never leaves the read-only transaction)", async () => {
    const json = await diff(taskDsn('mysql'), businessDb.dsn, 'amount > 0');
    expect(findingKeys(json, 'levels')).toEqual(EXPECTED);
    const split = json.rules[0]?.checksum[1];
    expect(split?.width).toBeGreaterThanOrEqual(HASH_SPACE / MAX_FANOUT);
  }, 120_000);

  it('PostgreSQL tasks against PostgreSQL business rows, grouped by both servers', async () => {
    const json = await diff(taskDsn('postgres'), pgBusiness.dsn, 'amount > 0');
    expect(findingKeys(json, 'levels')).toEqual(BYTEWISE);
  }, 120_000);
});
