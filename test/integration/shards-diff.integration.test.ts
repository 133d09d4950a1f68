import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import {
  asyncTaskDdl,
  createDatabase,
  dropDatabase,
  machineMariadb,
  openShardDb,
  type ShardDb,
  type ShardServer,
} from '../support/mariadb-servers.js';
import { machinePostgres } from '../support/shard-sql.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * diff on a sharded source: three shards in two databases of the machine's MariaDB (a PostgreSQL
 * shard beside them at the end). Rule `order-paid` compares every shard with one business
 * table in a third database (the checksum walk, per shard); rule `coupon-local` names no
 * database, so each shard is compared with the `user_coupon` of its own database. Every count is
 * checked against SQL over all shards at once; an orphan is a business row no shard has a task
 * for, whichever shard or database it would be on.
 */
const prefix = `tr_shd_${randomBytes(3).toString('hex')}_`;
const A = `${prefix}a`;
const B = `${prefix}b`;
const BIZ = `${prefix}biz`;
const PG = `${prefix}pg`;
const maria = machineMariadb();
const postgres = machinePostgres();
const A0 = `${A}.async_task_0`;
const A1 = `${A}.async_task_1`;
const B2 = `${B}.async_task_2`;
const TABLES = [
  { db: A, table: 'async_task_0' },
  { db: A, table: 'async_task_1' },
  { db: B, table: 'async_task_2' },
];
let dir = '';
let config = '';
let admin: ShardDb;

const SUCCESS = 2;
const FAILED = 3;
const PENDING = 0;

interface Finding {
  kind: string;
  rule: string;
  taskId: number | null;
  key: string | null;
  businessRows: number;
  shard?: string | null;
}
type Counts = Record<'missing' | 'duplicate' | 'orphan' | 'unsettled', number>;
interface DiffJson {
  rules: Array<{ name: string; findings: Counts; samples: Finding[]; tasksChecked: number; table: string }>;
  total: Counts;
  shards: Array<{
    name: string;
    ok: boolean;
    findings?: Counts;
    rules?: Array<{ name: string; walk: string }>;
  }>;
  missingShards?: string[];
  enqueue: {
    runId: string;
    applied: number;
    dryRun: boolean;
    results: Array<{ id: number; shard: string }>;
  } | null;
  createMissing?: {
    dryRun: boolean;
    created: number;
    results: Array<{ key: string; outcome: string; shard: string; taskId: number | null }>;
  };
}

/** A port nothing listens on: taken from the kernel, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const q = <T = Record<string, unknown>>(sql: string) => admin.query<T>(sql);
const num = async (sql: string) => Number((await q<{ n: unknown }>(sql))[0]?.n ?? 0);

async function tasks(db: string, table: string, rows: Array<[string, string, number]>): Promise<void> {
  const values = rows
    .map(([biz, key, status]) => `('${biz}', '${key}', '${table}-${key}', ${status}, NOW() - INTERVAL 1 DAY)`)
    .join(', ');
  await q(
    `INSERT INTO \`${db}\`.\`${table}\` (biz_type, biz_id, event_id, status, created_at) VALUES ${values}`,
  );
}

/** Every task row and audit row of the shards' databases, as text: what a write changes shows here. */
async function snapshot(): Promise<string> {
  const parts: string[] = [];
  for (const t of TABLES) {
    const rows = await q<{ Checksum: unknown }>(`CHECKSUM TABLE \`${t.db}\`.\`${t.table}\` EXTENDED`);
    parts.push(`${t.db}.${t.table}:${String(rows[0]?.Checksum)}`);
  }
  for (const db of [A, B])
    parts.push(`${db}:${await num(`SELECT COUNT(*) AS n FROM \`${db}\`.taskrecon_audit`)}`);
  return parts.join(' ');
}

/** `WHERE NOT EXISTS` a task of `bizType` with key `expr` on any of the shards. */
const noTaskAnywhere = (bizType: string, expr: string) =>
  TABLES.map(
    (t) =>
      `NOT EXISTS (SELECT 1 FROM \`${t.db}\`.\`${t.table}\` t WHERE t.biz_type = '${bizType}' AND t.biz_id = ${expr})`,
  ).join(' AND ');

/** The findings of the rules, computed in SQL over every shard (the ground truth). */
async function truth(): Promise<Record<string, Counts>> {
  const pay: Counts = { missing: 0, duplicate: 0, orphan: 0, unsettled: 0 };
  const coupon: Counts = { missing: 0, duplicate: 0, orphan: 0, unsettled: 0 };
  for (const t of TABLES) {
    const from = `FROM \`${t.db}\`.\`${t.table}\` t`;
    const rows = (table: string) => `(SELECT COUNT(*) FROM ${table} b WHERE b.order_no = t.biz_id)`;
    const paid = rows(`\`${BIZ}\`.paid_order`);
    pay.missing += await num(
      `SELECT COUNT(*) AS n ${from} WHERE biz_type = 'pay' AND status = ${SUCCESS} AND ${paid} = 0`,
    );
    pay.duplicate += await num(
      `SELECT COUNT(*) AS n ${from} WHERE biz_type = 'pay' AND status = ${SUCCESS} AND ${paid} > 1`,
    );
    pay.unsettled += await num(
      `SELECT COUNT(*) AS n ${from} WHERE biz_type = 'pay' AND status IN (${FAILED}, ${PENDING}) AND ${paid} > 0`,
    );
    const own = `(SELECT COUNT(*) FROM \`${t.db}\`.user_coupon b WHERE b.order_id = t.biz_id)`;
    coupon.missing += await num(
      `SELECT COUNT(*) AS n ${from} WHERE biz_type = 'coupon' AND status = ${SUCCESS} AND ${own} = 0`,
    );
  }
  pay.orphan = await num(
    `SELECT COUNT(*) AS n FROM \`${BIZ}\`.paid_order b WHERE ${noTaskAnywhere('pay', 'b.order_no')}`,
  );
  for (const db of [A, B])
    coupon.orphan += await num(
      `SELECT COUNT(*) AS n FROM \`${db}\`.user_coupon b WHERE ${noTaskAnywhere('coupon', 'b.order_id')}`,
    );
  return { 'order-paid': pay, 'coupon-local': coupon };
}

function writeConfig(extraShard = ''): string {
  const dsn = (db: string) => maria.dsn(db);
  const file = join(dir, `config-${randomBytes(3).toString('hex')}.yaml`);
  writeFileSync(
    file,
    [
      'sources:',
      '  tasks:',
      '    profile: async-task',
      '    shards:',
      `      - { db: "${dsn(A)}", table: "async_task_{0..1}" }`,
      `      - { db: "${dsn(B)}", table: "async_task_2" }`,
      ...(extraShard ? [extraShard] : []),
      `  plain: { profile: async-task, db: "${dsn(A)}", table: async_task_0 }`,
      '  only-b:',
      '    profile: async-task',
      '    shards:',
      `      - { db: "${dsn(B)}", table: "async_task_2" }`,
      'rules:',
      `  - { name: order-paid, bizType: pay, business: { table: paid_order, key: order_no, db: "${dsn(BIZ)}" }, create: { payload: [order_no, user_id] } }`,
      '  - { name: coupon-local, bizType: coupon, business: { table: user_coupon, key: order_id } }',
      '',
    ].join('\n'),
  );
  return file;
}

const diff = (args: string[], file = config) =>
  runJson<DiffJson>(['diff', '--source', 'tasks', ...args, '--config', file], { cwd: dir });

beforeAll(async () => {
  admin = await openShardDb(maria as ShardServer);
  for (const db of [A, B, BIZ]) await createDatabase(admin, db);
  for (const t of TABLES) {
    const db = await openShardDb(maria as ShardServer, t.db);
    try {
      for (const ddl of asyncTaskDdl('mysql', t.table)) await db.query(ddl);
    } finally {
      await db.end();
    }
  }
  await q(
    `CREATE TABLE \`${BIZ}\`.paid_order (id INT AUTO_INCREMENT PRIMARY KEY, order_no VARCHAR(32) NOT NULL, user_id INT NOT NULL, KEY (order_no))`,
  );
  for (const db of [A, B])
    await q(
      `CREATE TABLE \`${db}\`.user_coupon (id INT AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(64) NOT NULL, KEY (order_id))`,
    );
  // order-paid: P2 and P5 missing, P11 duplicated, P3 unsettled; P8 and P9 (two rows) orphans.
  // P1, P4, P6 have their tasks on one shard each: on the other shards they have none.
  await tasks(A, 'async_task_0', [
    ['pay', 'P1', SUCCESS],
    ['pay', 'P2', SUCCESS],
    ['pay', 'P3', FAILED],
    ['pay', 'P11', SUCCESS],
    ['coupon', 'C1', SUCCESS],
  ]);
  await tasks(A, 'async_task_1', [
    ['pay', 'P4', SUCCESS],
    ['pay', 'P5', SUCCESS],
    ['coupon', 'C4', PENDING],
  ]);
  await tasks(B, 'async_task_2', [
    ['pay', 'P6', SUCCESS],
    ['pay', 'P7', PENDING],
    ['coupon', 'C6', SUCCESS],
  ]);
  await q(
    `INSERT INTO \`${BIZ}\`.paid_order (order_no, user_id) VALUES ('P1', 1), ('P3', 3), ('P4', 4), ('P6', 6), ('P8', 8), ('P9', 9), ('P9', 9), ('P11', 11), ('P11', 11)`,
  );
  // coupon-local: C6 missing (B has no row); C3 and C5 orphans; C4's row is in B, its task on a
  // shard of A: not an orphan.
  await q(`INSERT INTO \`${A}\`.user_coupon (order_id) VALUES ('C1'), ('C3')`);
  await q(`INSERT INTO \`${B}\`.user_coupon (order_id) VALUES ('C4'), ('C5')`);
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-shards-diff-'));
  config = writeConfig();
  for (const db of [A, B]) {
    const init = await runCli(['init', '--audit-only', '--db', maria.dsn(db)], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
  }
}, 60_000);

afterAll(async () => {
  for (const db of [A, B, BIZ]) await dropDatabase(admin, db).catch(() => undefined);
  await admin?.end();
  const pg = await openShardDb(postgres).catch(() => undefined);
  if (pg) {
    await dropDatabase(pg, PG).catch(() => undefined);
    await pg.end();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('diff on a sharded source', () => {
  it('counts every kind as SQL over all shards does, per rule, with shards[] per shard', async () => {
    const expected = await truth();
    expect(expected['order-paid']).toEqual({ missing: 2, duplicate: 1, orphan: 3, unsettled: 1 });
    expect(expected['coupon-local']).toEqual({ missing: 1, duplicate: 0, orphan: 2, unsettled: 0 });
    const { code, json, stderr } = await diff(['--samples', '50']);
    expect(code, stderr).toBe(1);
    assertMatchesSchema('diff', json);
    for (const rule of json.rules) expect(rule.findings, rule.name).toEqual(expected[rule.name]);
    expect(json.total).toEqual({ missing: 3, duplicate: 1, orphan: 5, unsettled: 1 });
    expect(json.rules[0]?.table).toBe('3 shards');
    expect(json.shards.map((s) => s.name)).toEqual([A0, A1, B2]);
    expect(json.shards.every((s) => s.ok)).toBe(true);
    // Per shard: missing, duplicate, unsettled of its tasks; they add up to the total's.
    expect(json.shards.map((s) => s.findings?.missing)).toEqual([1, 1, 1]);
    expect(json.shards[0]?.findings).toEqual({ missing: 1, duplicate: 1, orphan: 0, unsettled: 1 });
    expect(json.shards[0]?.rules?.map((r) => r.walk)).toEqual([
      'checksum',
      expect.stringMatching(/merge|join/),
    ]);
    const samples = json.rules.flatMap((r) => r.samples);
    expect(samples.find((s) => s.key === 'P2')?.shard).toBe(A0);
    expect(samples.find((s) => s.key === 'C6')?.shard).toBe(B2);
    expect(samples.filter((s) => s.kind === 'orphan').every((s) => s.shard === null)).toBe(true);
  });

  it('reports no orphan whose task is on another shard, and would with that shard left out', async () => {
    const { json } = await diff(['--samples', '50']);
    const orphanKeys = json.rules.flatMap((r) =>
      r.samples.filter((s) => s.kind === 'orphan').map((s) => s.key),
    );
    expect(orphanKeys.sort()).toEqual(['C3', 'C5', 'P8', 'P9']);
    // Diffing B's shard alone: P1 and P4 (tasks on A's shards) and C4 (task on A1, row in B) are orphans.
    const alone = await runJson<DiffJson>(
      ['diff', '--source', 'only-b', '--samples', '50', '--config', config],
      { cwd: dir },
    );
    const aloneKeys = alone.json.rules.flatMap((r) =>
      r.samples.filter((s) => s.kind === 'orphan').map((s) => s.key),
    );
    expect(aloneKeys).toEqual(expect.arrayContaining(['P1', 'P4', 'C4']));
  });

  it('streams every finding as an NDJSON line naming its shard, and CSV with a shard column', async () => {
    const nd = await runCli(['diff', '--source', 'tasks', '--format', 'ndjson', '--config', config], {
      cwd: dir,
    });
    expect(nd.code, nd.stderr).toBe(1);
    const lines = nd.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Finding);
    expect(lines).toHaveLength(3 + 1 + 1 + 4); // missing + duplicate + unsettled + orphan keys
    expect(lines.every((l) => 'shard' in l)).toBe(true);
    for (const l of lines)
      expect(l.kind === 'orphan' ? l.shard === null : [A0, A1, B2].includes(l.shard as string)).toBe(true);
    expect(lines.find((l) => l.key === 'P5')?.shard).toBe(A1);
    const csv = await runCli(['diff', '--source', 'tasks', '--format', 'csv', '--config', config], {
      cwd: dir,
    });
    const rows = csv.stdout.trim().split('\n');
    expect(rows[0]).toBe('rule,kind,taskId,key,bizId,eventId,status,businessRows,shard');
    expect(rows.find((r) => r.includes(',P2,'))?.endsWith(`,${A0}`)).toBe(true);
  });

  it('the table lists each shard and shows task ids as SHARD:ID', async () => {
    const table = await runCli(['diff', '--source', 'tasks', '--samples', '50', '--config', config], {
      cwd: dir,
    });
    expect(table.code, table.stderr).toBe(1);
    for (const shard of [A0, A1, B2]) expect(table.stdout).toContain(shard);
    const p2 = (await q<{ id: unknown }>(`SELECT id FROM \`${A}\`.async_task_0 WHERE biz_id = 'P2'`))[0]?.id;
    expect(table.stdout).toContain(`${A0}:${String(p2)}`);
  });

  it('--enqueue --dry-run and --create-missing --dry-run write nothing', async () => {
    const before = await snapshot();
    const dry = await diff(['--enqueue', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(1);
    expect(dry.json.enqueue?.dryRun).toBe(true);
    expect(dry.json.enqueue?.applied).toBe(3);
    const create = await diff(['--rule', 'order-paid', '--create-missing', '--into-shard', B2, '--dry-run']);
    expect(create.code, create.stderr).toBe(1);
    expect(create.json.createMissing?.results.map((r) => [r.key, r.outcome, r.shard]).sort()).toEqual([
      ['P8', 'would-create', B2],
      ['P9', 'would-create', B2],
    ]);
    expect(await snapshot()).toBe(before);
  });

  it('--create-missing without --into-shard, or with an unknown one, exits 3 naming the shards and writes nothing', async () => {
    const before = await snapshot();
    const without = await diff(['--create-missing', '--yes']);
    expect(without.code).toBe(3);
    expect(JSON.stringify(without.json)).toContain('--into-shard');
    expect(JSON.stringify(without.json)).toContain(A0);
    const unknown = await diff(['--create-missing', '--into-shard', 'nosuch.async_task_9', '--yes']);
    expect(unknown.code).toBe(3);
    expect(JSON.stringify(unknown.json)).toMatch(/unknown shard 'nosuch.async_task_9'/);
    const alone = await diff(['--into-shard', B2]);
    expect(alone.code).toBe(3);
    expect(JSON.stringify(alone.json)).toContain('--into-shard goes with --create-missing');
    const plain = await runJson<DiffJson>(
      ['diff', '--source', 'plain', '--create-missing', '--into-shard', B2, '--yes', '--config', config],
      { cwd: dir },
    );
    expect(plain.code).toBe(3);
    expect(JSON.stringify(plain.json)).toContain('--into-shard is for a sharded source');
    expect(await snapshot()).toBe(before);
  });

  it('--enqueue with one shard database lacking its audit table exits 3 naming it and writes nothing', async () => {
    const before = await snapshot();
    await q(`RENAME TABLE \`${B}\`.taskrecon_audit TO \`${B}\`.taskrecon_audit_away`);
    try {
      // One shard at a time, B's last: without the check up front, A's shards would be written first.
      const { code, json } = await diff(['--enqueue', '--yes', '--shard-concurrency', '1']);
      expect(code).toBe(3);
      expect(JSON.stringify(json)).toContain(B2);
    } finally {
      await q(`RENAME TABLE \`${B}\`.taskrecon_audit_away TO \`${B}\`.taskrecon_audit`);
    }
    expect(await snapshot()).toBe(before);
  });

  it('--enqueue sends each missing task back to pending on its shard, audited in its database under one run id', async () => {
    const { code, json, stderr } = await diff(['--enqueue', '--yes', '--reason', 'lost in the outage']);
    expect(code, stderr).toBe(1);
    expect(json.enqueue?.applied).toBe(3);
    assertMatchesSchema('diff', json);
    expect(json.enqueue?.results.map((r) => r.shard).sort()).toEqual([A0, A1, B2].sort());
    const runId = json.enqueue?.runId as string;
    for (const [db, table, key] of [
      [A, 'async_task_0', 'P2'],
      [A, 'async_task_1', 'P5'],
      [B, 'async_task_2', 'C6'],
    ] as const) {
      expect(await num(`SELECT status AS n FROM \`${db}\`.\`${table}\` WHERE biz_id = '${key}'`)).toBe(
        PENDING,
      );
      const audit = await q<{ task_table: string; run_id: string; action: string }>(
        `SELECT a.task_table, a.run_id, a.action FROM \`${db}\`.taskrecon_audit a JOIN \`${db}\`.\`${table}\` t ON a.task_id = t.id
          WHERE t.biz_id = '${key}' AND a.task_table = '${table}'`,
      );
      expect(audit).toEqual([{ task_table: table, run_id: runId, action: 'requeue' }]);
    }
    const again = await diff([]);
    expect(again.json.total.missing).toBe(0);
    expect(again.json.total.unsettled).toBe(1);
  });

  it('--create-missing --into-shard creates each orphan once in that shard, audited there', async () => {
    const { code, json, stderr } = await diff([
      '--rule',
      'order-paid',
      '--create-missing',
      '--into-shard',
      B2,
      '--yes',
    ]);
    expect(code, stderr).toBe(1);
    expect(json.createMissing?.created).toBe(2);
    assertMatchesSchema('diff', json);
    const created = await q<{ biz_id: string; event_id: string; status: number; payload: string }>(
      `SELECT biz_id, event_id, status, payload FROM \`${B}\`.async_task_2 WHERE event_id LIKE 'order-paid:%' ORDER BY biz_id`,
    );
    expect(created.map((r) => [r.biz_id, r.event_id, Number(r.status)])).toEqual([
      ['P8', 'order-paid:P8', PENDING],
      ['P9', 'order-paid:P9', PENDING],
    ]);
    expect(
      await num(`SELECT COUNT(*) AS n FROM \`${B}\`.taskrecon_audit WHERE action = 'create-missing'`),
    ).toBe(2);
    expect(
      await num(`SELECT COUNT(*) AS n FROM \`${A}\`.taskrecon_audit WHERE action = 'create-missing'`),
    ).toBe(0);
    const again = await diff(['--rule', 'order-paid']);
    expect(again.json.total.orphan).toBe(0);
    expect(again.json.total.orphan).toBe((await truth())['order-paid']?.orphan);
  });

  it('stops with exit 3 naming an unreachable shard; --allow-partial sums the rest and names it', async () => {
    const port = await closedPort();
    const file = writeConfig(
      `      - { db: "mysql://root@127.0.0.1:${port}/gone", table: "async_task_9", name: gone-9 }`,
    );
    const before = await snapshot();
    const stopped = await diff([], file);
    expect(stopped.code).toBe(3);
    expect(JSON.stringify(stopped.json)).toContain('gone-9');
    const partial = await diff(['--allow-partial'], file);
    expect(partial.code, partial.stderr).toBe(1);
    expect(partial.json.missingShards).toEqual(['gone-9']);
    assertMatchesSchema('diff', partial.json);
    expect(partial.json.shards.find((s) => s.name === 'gone-9')?.ok).toBe(false);
    const full = await diff([]);
    expect(partial.json.total).toEqual(full.json.total);
    expect(partial.stderr).toContain('gone-9');
    const create = await diff(['--allow-partial', '--create-missing', '--into-shard', B2, '--yes'], file);
    expect(create.code).toBe(3);
    expect(await snapshot()).toBe(before);
  });

  it('diffs a PostgreSQL shard beside the MariaDB ones against the same business table', async () => {
    const pgAdmin = await openShardDb(postgres);
    try {
      await createDatabase(pgAdmin, PG);
    } finally {
      await pgAdmin.end();
    }
    const pg = await openShardDb(postgres, PG);
    try {
      for (const ddl of asyncTaskDdl('postgres', 'async_task_pg')) await pg.query(ddl);
      // P12 missing; P13 pending with a business row: unsettled, and not an orphan.
      await pg.query(
        `INSERT INTO async_task_pg (biz_type, biz_id, event_id, status) VALUES ('pay', 'P12', 'pg-P12', ${SUCCESS}), ('pay', 'P13', 'pg-P13', ${PENDING})`,
      );
    } finally {
      await pg.end();
    }
    await q(`INSERT INTO \`${BIZ}\`.paid_order (order_no, user_id) VALUES ('P13', 13), ('P14', 14)`);
    const file = writeConfig(`      - { db: "${postgres.dsn(PG)}", table: "async_task_pg", name: pg-0 }`);
    const { code, json, stderr } = await diff(['--rule', 'order-paid', '--samples', '50'], file);
    expect(code, stderr).toBe(1);
    const rule = json.rules[0];
    // Missing: P12 on the PostgreSQL shard; orphans: P14 only (P13's task is on the PostgreSQL shard).
    expect(rule?.samples.filter((s) => s.kind === 'missing').map((s) => [s.key, s.shard])).toEqual([
      ['P12', 'pg-0'],
    ]);
    expect(rule?.samples.filter((s) => s.kind === 'orphan').map((s) => s.key)).toEqual(['P14']);
    expect(json.shards.find((s) => s.name === 'pg-0')?.rules?.[0]?.walk).toBe('checksum');
  });
});
