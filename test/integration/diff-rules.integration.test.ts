import Database from 'better-sqlite3';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';
import type { DiffJson } from '../support/diff-json.js';

/**
 * Business tables seeded with exactly known missing, duplicate, orphan and unsettled sets; diff
 * must report exactly those sets (as sets of keys, not only counts) for each expect mode, on one
 * server, across two MariaDB databases, and with the tasks in SQLite against MariaDB.
 */
const APP_ZONE = '+08:00';
let tasksDb: TestSchema;
let otherDb: TestSchema;
let dir: string;
let sqliteFile: string;

// status: 0 pending, 1 processing, 2 success, 3 failed, 4 compensated; rows: business rows for the key.
const TASKS: Array<[string, number, number]> = [
  ['ok-1', 2, 1],
  ['ok-2', 2, 1],
  ['ok-3', 2, 1],
  ['miss-1', 2, 0],
  ['miss-2', 2, 0],
  ['dup-1', 2, 2],
  ['dup-2', 2, 3],
  ['uns-failed', 3, 1],
  ['uns-pending', 0, 1],
  ['failed-no-effect', 3, 0],
  ['pending-no-effect', 0, 0],
  ['in-flight', 1, 1],
  ['compensated', 4, 1],
];
const ORPHANS: Array<[string, number]> = [
  ['orphan-1', 1],
  ['orphan-2', 2],
  ['sms-only', 1], // a task of another biz type has this key: still an orphan of the coupon rule
];

const EXPECTED = {
  'exactly-one': {
    missing: ['miss-1', 'miss-2'],
    duplicate: ['dup-1', 'dup-2'],
    unsettled: ['uns-failed', 'uns-pending'],
  },
  'at-least-one': { missing: ['miss-1', 'miss-2'], duplicate: [], unsettled: ['uns-failed', 'uns-pending'] },
  'at-most-one': { missing: [], duplicate: ['dup-1', 'dup-2'], unsettled: ['uns-failed', 'uns-pending'] },
} as const;
const ORPHAN_KEYS = ['orphan-1', 'orphan-2', 'sms-only'];
const ORPHAN_ROWS = 4;

const BUSINESS_DDL = `CREATE TABLE user_coupon (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  order_id VARCHAR(64) NOT NULL,
  amount INT NOT NULL DEFAULT 10,
  KEY idx_order (order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;

function businessRows(): string[] {
  const keys: string[] = [];
  for (const [key, , rows] of TASKS) for (let i = 0; i < rows; i++) keys.push(key);
  for (const [key, rows] of ORPHANS) for (let i = 0; i < rows; i++) keys.push(key);
  return keys;
}

function rules(businessDb?: string): string {
  const db = businessDb ? `, db: "${businessDb}"` : '';
  return ['exactly-one', 'at-least-one', 'at-most-one']
    .map(
      (mode) =>
        `  - { name: coupon-${mode}, bizType: coupon, business: { table: user_coupon, key: order_id, expect: ${mode}${db} } }`,
    )
    .join('\n');
}

function config(name: string, text: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, text);
  return file;
}

beforeAll(async () => {
  tasksDb = await createTestSchema('diff_rules', { timeZone: APP_ZONE });
  otherDb = await createTestSchema('diff_rules_b');
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-diff-'));
  sqliteFile = join(dir, 'tasks.sqlite');
  expect((await runCli(['init', '--db', tasksDb.dsn])).code).toBe(0);
  expect((await runCli(['init', '--db', `sqlite:${sqliteFile}`])).code).toBe(0);
  const values = TASKS.map(([key, status], i) => `('coupon', '${key}', 'evt-${i}', ${status})`).join(', ');
  await tasksDb.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ${values}, ('sms', 'sms-only', 'evt-sms', 2)`,
  );
  const business = businessRows()
    .map((k) => `('${k}')`)
    .join(', ');
  for (const s of [tasksDb, otherDb]) {
    await s.sql.query(BUSINESS_DDL);
    await s.sql.query(`INSERT INTO user_coupon (order_id) VALUES ${business}`);
  }
  const lite = new Database(sqliteFile);
  lite.exec(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ${values}, ('sms', 'sms-only', 'evt-sms', 2)`,
  );
  lite.close();
});

afterAll(async () => {
  await tasksDb?.drop();
  await otherDb?.drop();
});

function check(json: DiffJson, mode: string): void {
  assertMatchesSchema('diff', json);
  expect(json.rules.map((r) => r.mode)).toEqual([mode, mode, mode]);
  for (const rule of json.rules) {
    const expectMode = rule.name.replace('coupon-', '') as keyof typeof EXPECTED;
    const wanted = EXPECTED[expectMode];
    const keysOf = (kind: string) =>
      rule.samples
        .filter((s) => s.kind === kind)
        .map((s) => s.key)
        .sort();
    expect(keysOf('missing'), `${rule.name} missing`).toEqual([...wanted.missing].sort());
    expect(keysOf('duplicate'), `${rule.name} duplicate`).toEqual([...wanted.duplicate].sort());
    expect(keysOf('unsettled'), `${rule.name} unsettled`).toEqual([...wanted.unsettled].sort());
    expect(keysOf('orphan'), `${rule.name} orphan`).toEqual(ORPHAN_KEYS);
    expect(rule.findings).toEqual({
      missing: wanted.missing.length,
      duplicate: wanted.duplicate.length,
      orphan: ORPHAN_ROWS,
      unsettled: wanted.unsettled.length,
    });
    expect(rule.tasksChecked).toBe(TASKS.length);
    const dup2 = rule.samples.find((s) => s.key === 'dup-2');
    if (dup2) expect(dup2.businessRows).toBe(3);
  }
}

describe('diff finds exactly the seeded sets', () => {
  it('on one MariaDB server (chunked LEFT JOIN anti-joins), exit 1', async () => {
    const file = config('same', `db: ${tasksDb.dsn}\nappTimeZone: "${APP_ZONE}"\nrules:\n${rules()}\n`);
    const { code, json } = await runJson<DiffJson>(['diff', '--config', file, '--samples', '100'], {
      env: { TZ: 'America/New_York' },
    });
    expect(code).toBe(1);
    check(json, 'same-server');
  });

  it('across two MariaDB databases over two connections (segment checksums)', async () => {
    const file = config('cross', `db: ${tasksDb.dsn}\nrules:\n${rules(otherDb.dsn)}\n`);
    const { code, json } = await runJson<DiffJson>(['diff', '--config', file, '--samples', '100']);
    expect(code).toBe(1);
    check(json, 'cross-server');
  });

  it('with the tasks in SQLite and the business table in MariaDB', async () => {
    const file = config('lite', `db: sqlite:${sqliteFile}\nrules:\n${rules(tasksDb.dsn)}\n`);
    const { code, json } = await runJson<DiffJson>(['diff', '--config', file, '--samples', '100']);
    expect(code).toBe(1);
    check(json, 'cross-server');
  });

  it('streams every finding as NDJSON, the same set as the samples', async () => {
    const file = config('same-nd', `db: ${tasksDb.dsn}\nrules:\n${rules()}\n`);
    const result = await runCli([
      'diff',
      '--config',
      file,
      '--rule',
      'coupon-exactly-one',
      '--format',
      'ndjson',
      '--samples',
      '0',
    ]);
    expect(result.code).toBe(1);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; key: string });
    expect(lines.map((l) => `${l.kind}:${l.key}`).sort()).toEqual(
      [
        ...EXPECTED['exactly-one'].missing.map((k) => `missing:${k}`),
        ...EXPECTED['exactly-one'].duplicate.map((k) => `duplicate:${k}`),
        ...EXPECTED['exactly-one'].unsettled.map((k) => `unsettled:${k}`),
        ...ORPHAN_KEYS.map((k) => `orphan:${k}`),
      ].sort(),
    );
  });

  it.each([
    ['on one server', ''],
    ['across servers', 'cross'],
  ])('leaves orphans out when the rule says business.orphans: false (%s)', async (_label, cross) => {
    const db = cross ? `, db: "${otherDb.dsn}"` : '';
    const file = config(
      `no-orphans-${cross}`,
      `db: ${tasksDb.dsn}\nrules:\n  - { name: no-orphans, bizType: coupon, business: { table: user_coupon, key: order_id, orphans: false${db} } }\n`,
    );
    const { code, json } = await runJson<DiffJson>(['diff', '--config', file, '--samples', '100']);
    expect(code).toBe(1);
    const wanted = EXPECTED['exactly-one'];
    expect(json.rules[0]?.findings).toEqual({
      missing: wanted.missing.length,
      duplicate: wanted.duplicate.length,
      orphan: 0,
      unsettled: wanted.unsettled.length,
    });
  });

  it('reports nothing and exits 0 when the tables agree', async () => {
    await otherDb.sql.query(`CREATE TABLE clean_coupon LIKE user_coupon`);
    await otherDb.sql.query(`INSERT INTO clean_coupon (order_id) VALUES ('a'), ('b'), ('c')`);
    const file = config(
      'clean',
      `db: ${tasksDb.dsn}\nrules:\n  - { name: clean, bizType: clean, business: { table: clean_coupon, key: order_id, db: "${otherDb.dsn}" } }\n  - { name: clean-same, bizType: clean, business: { table: clean_coupon, key: order_id } }\n`,
    );
    await tasksDb.sql.query(`CREATE TABLE clean_coupon LIKE user_coupon`);
    await tasksDb.sql.query(`INSERT INTO clean_coupon (order_id) VALUES ('a'), ('b'), ('c')`);
    await tasksDb.sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ('clean', 'a', 'c-a', 2), ('clean', 'b', 'c-b', 2), ('clean', 'c', 'c-c', 2)`,
    );
    const { code, json } = await runJson<DiffJson>(['diff', '--config', file]);
    expect(json.total).toEqual({ missing: 0, duplicate: 0, orphan: 0, unsettled: 0 });
    expect(code).toBe(0);
    expect(json.rules.map((r) => r.tasksChecked)).toEqual([3, 3]);
  });

  it('across servers, still finds what only the statuses tell when the keys agree byte for byte', async () => {
    // Every key has exactly one row on each side, so the digests of the keys as stored agree:
    // only the tasks' statuses make s-failed and s-pending unsettled.
    await otherDb.sql.query(`CREATE TABLE settle_coupon LIKE user_coupon`);
    await otherDb.sql.query(
      `INSERT INTO settle_coupon (order_id) VALUES ('s-done'), ('s-failed'), ('s-pending'), ('s-flight')`,
    );
    await tasksDb.sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES
       ('settle', 's-done', 's-1', 2), ('settle', 's-failed', 's-2', 3), ('settle', 's-pending', 's-3', 0), ('settle', 's-flight', 's-4', 1)`,
    );
    const file = config(
      'settle',
      `db: ${tasksDb.dsn}\nrules:\n  - { name: settle, bizType: settle, business: { table: settle_coupon, key: order_id, db: "${otherDb.dsn}" } }\n`,
    );
    const { code, json } = await runJson<DiffJson>(['diff', '--config', file, '--samples', '10']);
    expect(json.rules[0]?.samples.map((s) => `${s.kind}:${s.key}`).sort()).toEqual([
      'unsettled:s-failed',
      'unsettled:s-pending',
    ]);
    expect(code).toBe(1);
  });
});
