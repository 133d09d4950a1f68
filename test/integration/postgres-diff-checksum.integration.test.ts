import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { diffWithFindings, findingKeys, type DiffJson } from '../support/diff-json.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { startPgCluster, type PgCluster } from '../support/postgres-cluster.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

/**
 * Cross-server diffs with PostgreSQL on one side: tasks on the shared PostgreSQL server against
 * business tables on MariaDB and on a second PostgreSQL server (a throw-away cluster), and tasks
 * on MariaDB against that cluster. Every server hashes its own keys (MD5's first bytes, which both
 * engines compute in SQL), so equal tables agree at the first digest and planted differences — a
 * missing row, an orphan, a row whose key changed, keys that differ only in case, a trailing
 * space or one byte of a non-ASCII character — are found exactly, each as the business key's
 * collation compares keys (PostgreSQL's byte-wise).
 */
let tasksPg: PgTestDatabase;
let tasksMaria: TestSchema;
let maria: TestSchema;
let cluster: PgCluster;
let clusterSql: Client;
let dir: string;

const BULK = Array.from({ length: 2000 }, (_, i) => `k${String(i).padStart(4, '0')}`);
// Done tasks with keys that break naive comparisons; 'u1' failed (3), 'p1' pending (0).
const SPECIAL_TASKS: Array<[string, number]> = [
  ['Case-1', 2],
  ['trail', 2],
  ['price-€', 2],
  ['straße', 2],
  ['k-dup', 2],
  ['u1', 3],
  ['p1', 0],
];
const TASK_KEYS = [...BULK.map((k): [string, number] => [k, 2]), ...SPECIAL_TASKS];
/** Biz type `same`: done tasks only, whose business table holds exactly their keys. */
const EQUAL_ROWS = [...BULK, 'Case-1', 'trail', 'price-€', 'straße', 'k-dup'];
const ALL_TASKS: Array<[string, string, number]> = [
  ...TASK_KEYS.map(([k, status]): [string, string, number] => ['coupon', k, status]),
  ...EQUAL_ROWS.map((k): [string, string, number] => ['same', k, 2]),
];

/** The business rows: k0100 missing, k0200 changed to k0200x, and the special keys as planted. */
const PLANTED_ROWS = [
  ...BULK.filter((k) => k !== 'k0100').map((k) => (k === 'k0200' ? 'k0200x' : k)),
  'case-1', // case differs
  'trail ', // a trailing space
  'price-₭', // U+20AD: one byte from U+20AC
  'straße', // the same non-ASCII key
  'k-dup',
  'k-dup',
  'u1',
  'zz-orphan',
];

const SHARED = [
  'missing:k0100',
  'missing:k0200',
  'orphan:k0200x×1',
  'missing:price-€',
  'orphan:price-₭×1',
  'duplicate:k-dup',
  'unsettled:u1',
  'orphan:zz-orphan×1',
];
const CASE = ['missing:Case-1', 'orphan:case-1×1'];
const TRAIL = ['missing:trail', 'orphan:trail ×1'];
/** Findings by the business key's collation. */
const BYTEWISE = [...SHARED, ...CASE, ...TRAIL].sort();
const PAD_SPACE = [...SHARED, ...CASE].sort();
const CASE_INSENSITIVE = [...SHARED].sort();

async function seedTasksPg(): Promise<void> {
  const init = await runCli(['init', '--db', tasksPg.dsn]);
  expect(init.code, init.stderr).toBe(0);
  const values = ALL_TASKS.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4})`);
  await tasksPg.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ${values.join(', ')}`,
    ALL_TASKS.flatMap(([type, k, status], i) => [type, k, `e${i}`, status]),
  );
}

async function seedTasksMaria(): Promise<void> {
  const init = await runCli(['init', '--db', tasksMaria.dsn]);
  expect(init.code, init.stderr).toBe(0);
  await tasksMaria.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ${ALL_TASKS.map(() => '(?, ?, ?, ?)').join(', ')}`,
    ALL_TASKS.flatMap(([type, k, status], i) => [type, k, `e${i}`, status]),
  );
}

const MARIA_TABLES: Array<[string, string, string[]]> = [
  ['coupon_nopad', 'utf8mb4_nopad_bin', PLANTED_ROWS],
  ['coupon_bin', 'utf8mb4_bin', PLANTED_ROWS],
  ['coupon_ci', 'utf8mb4_general_ci', PLANTED_ROWS],
  ['coupon_same', 'utf8mb4_bin', EQUAL_ROWS],
];

async function seedMaria(): Promise<void> {
  for (const [table, collation, rows] of MARIA_TABLES) {
    await maria.sql.query(
      `CREATE TABLE ${table} (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
         order_id VARCHAR(64) COLLATE ${collation} NOT NULL, KEY idx_order (order_id)) DEFAULT CHARSET=utf8mb4`,
    );
    await maria.sql.query(`INSERT INTO ${table} (order_id) VALUES ${rows.map(() => '(?)').join(', ')}`, rows);
  }
}

const CLUSTER_TABLES: Array<[string, string, string[]]> = [
  ['coupon', '', PLANTED_ROWS],
  ['coupon_c', ' COLLATE "C"', PLANTED_ROWS],
  ['coupon_same', '', EQUAL_ROWS],
];

async function seedCluster(): Promise<void> {
  const admin = await cluster.connect();
  try {
    await admin.query('CREATE DATABASE biz');
  } finally {
    await admin.end();
  }
  clusterSql = await cluster.connect('biz');
  for (const [table, collate, rows] of CLUSTER_TABLES) {
    await clusterSql.query(
      `CREATE TABLE ${table} (id bigserial PRIMARY KEY, order_id varchar(64)${collate} NOT NULL);
       CREATE INDEX ${table}_order ON ${table} (order_id)`,
    );
    await clusterSql.query(
      `INSERT INTO ${table} (order_id) VALUES ${rows.map((_, i) => `($${i + 1})`).join(', ')}`,
      rows,
    );
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-pgchecksum-'));
  [tasksPg, tasksMaria, maria, cluster] = await Promise.all([
    createPgDatabase('pg_checksum'),
    createTestSchema('pg_checksum_t'),
    createTestSchema('pg_checksum_b'),
    startPgCluster(),
  ]);
  await Promise.all([seedTasksPg(), seedTasksMaria(), seedMaria(), seedCluster()]);
}, 120_000);

afterAll(async () => {
  await clusterSql?.end();
  cluster?.destroy();
  await Promise.all([tasksPg?.drop(), tasksMaria?.drop(), maria?.drop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface ChecksumJson extends DiffJson {
  rules: Array<
    DiffJson['rules'][number] & { checksum: Array<{ width: number; mismatched: number; hash: string }> }
  >;
}

/** A config of one rule per business table of `businessDsn`, tasks in `taskDsn`. */
function config(taskDsn: string, businessDsn: string, tables: string[]): string {
  const file = join(dir, `rules-${Math.random().toString(36).slice(2)}.yaml`);
  const rules = tables
    .map(
      (t) =>
        `  - { name: ${t}, bizType: ${t === 'coupon_same' ? 'same' : 'coupon'}, business: { table: ${t}, key: order_id, db: "${businessDsn}" } }`,
    )
    .join('\n');
  writeFileSync(file, `db: ${taskDsn}\nrules:\n${rules}\n`);
  return file;
}

async function diffRule(taskDsn: string, businessDsn: string, table: string) {
  return runJson<ChecksumJson>([
    'diff',
    '--config',
    config(taskDsn, businessDsn, [table]),
    '--samples',
    '100',
  ]);
}

describe.each([
  ['PostgreSQL tasks, MariaDB business rows', () => [tasksPg.dsn, maria.dsn]],
  ['PostgreSQL tasks, business rows on a second PostgreSQL server', () => [tasksPg.dsn, cluster.dsn('biz')]],
  ['MariaDB tasks, business rows on PostgreSQL', () => [tasksMaria.dsn, cluster.dsn('biz')]],
])('cross-server diff: %s', (_label, dsns) => {
  it('equal tables agree at the first digest, computed by each server: no finding, exit 0', async () => {
    const [tasks, business] = dsns() as [string, string];
    const run = await diffRule(tasks, business, 'coupon_same');
    expect(run.code, run.stderr).toBe(0);
    const [rule] = run.json.rules;
    expect(rule?.mode).toBe('cross-server');
    expect(rule?.findings).toMatchObject({ missing: 0, duplicate: 0, orphan: 0, unsettled: 0 });
    // The keys as stored hash alike on both servers: the whole-table digests match.
    expect(rule?.checksum[0]?.mismatched).toBe(0);
    expect(rule?.tasksChecked).toBe(EQUAL_ROWS.length);
  });
});

describe('cross-server diff finds exactly the planted differences', () => {
  it.each([
    ['utf8mb4_nopad_bin: byte-wise', 'coupon_nopad', BYTEWISE],
    ['utf8mb4_bin: trailing spaces ignored', 'coupon_bin', PAD_SPACE],
    ['utf8mb4_general_ci: case and trailing spaces ignored', 'coupon_ci', CASE_INSENSITIVE],
  ])('PostgreSQL tasks against MariaDB %s', async (_label, table, expected) => {
    const json = await diffWithFindings<ChecksumJson>([
      '--config',
      config(tasksPg.dsn, maria.dsn, [table]),
      '--samples',
      '100',
    ]);
    expect(findingKeys(json, table)).toEqual(expected);
    expect(json.rules[0]?.checksum[0]?.mismatched).toBe(1);
  });

  it.each([
    ['the default collation', 'coupon'],
    ['COLLATE "C"', 'coupon_c'],
  ])('PostgreSQL tasks against PostgreSQL business keys in %s: byte-wise', async (_label, table) => {
    const json = await diffWithFindings<ChecksumJson>([
      '--config',
      config(tasksPg.dsn, cluster.dsn('biz'), [table]),
      '--samples',
      '100',
    ]);
    expect(findingKeys(json, table)).toEqual(BYTEWISE);
  });

  it('MariaDB tasks against PostgreSQL business keys: byte-wise', async () => {
    const json = await diffWithFindings<ChecksumJson>([
      '--config',
      config(tasksMaria.dsn, cluster.dsn('biz'), ['coupon']),
      '--samples',
      '100',
    ]);
    expect(findingKeys(json, 'coupon')).toEqual(BYTEWISE);
  });

  it('a row changed on the business side after an equal run is found (the check can fail)', async () => {
    await clusterSql.query(`UPDATE coupon_same SET order_id = 'k0007 ' WHERE order_id = 'k0007'`);
    try {
      const json = await diffWithFindings<ChecksumJson>([
        '--config',
        config(tasksPg.dsn, cluster.dsn('biz'), ['coupon_same']),
      ]);
      expect(findingKeys(json, 'coupon_same')).toEqual(['missing:k0007', 'orphan:k0007 ×1']);
      expect(json.rules[0]?.checksum[0]?.mismatched).toBe(1);
    } finally {
      await clusterSql.query(`UPDATE coupon_same SET order_id = 'k0007' WHERE order_id = 'k0007 '`);
    }
  });
});
