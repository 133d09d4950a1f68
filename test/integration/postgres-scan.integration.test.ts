import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The PostgreSQL session is UTC while the client runs in Shanghai, 8 hours ahead: scan must not care.
const CLIENT_ZONE = 'Asia/Shanghai';
const FAILED_ROWS = 2500;
let db: PgTestDatabase;
let cwd: string;

interface TaskJson {
  id: number;
  bizId: string;
  eventId: string;
  status: string;
  attempts: number;
  nextRetryAt: string;
  updatedAt: string;
  lastError: string | null;
}

interface ScanJson {
  summary: {
    total: number;
    byStatus: Record<string, number>;
    stuck: number;
    due: number;
    oldestDueSeconds: number | null;
  };
  stuck: TaskJson[];
  due: TaskJson[];
  failed: TaskJson[];
}

beforeAll(async () => {
  db = await createPgDatabase('pg_scan');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-pg-scan-'));
  writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${db.dsn}\n`);
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  // Rows just inside and just outside the stuck (10m) and due (now) cutoffs.
  await db.sql.query(`
    INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at) VALUES
    ('coupon', 'due-1',     'e1', '{"orderId": 1}', 0, 1, now() - interval '1 second', 'timeout',  now() - interval '1 hour', now() - interval '1 minute'),
    ('coupon', 'due-old',   'e2', '{}', 0, 3, now() - interval '2 hours',  'HTTP 503', now() - interval '3 hours', now() - interval '2 hours'),
    ('coupon', 'not-due',   'e3', '{}', 0, 1, now() + interval '2 minutes', NULL,      now() - interval '1 hour', now()),
    ('sms',    'stuck',     'e4', '{}', 1, 0, now() - interval '1 hour',   NULL,       now() - interval '1 hour', now() - interval '630 seconds'),
    ('sms',    'in-flight', 'e5', '{}', 1, 0, now() - interval '1 day',    NULL,       now() - interval '1 hour', now() - interval '30 seconds'),
    ('points', 'done',      'e7', '{}', 2, 0, now(),                       NULL,       now() - interval '1 hour', now()),
    ('points', 'compensated','e8','{}', 4, 7, now(),                       NULL,       now() - interval '1 hour', now())`);
  await db.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error, created_at, updated_at)
     SELECT 'sms', 'failed-' || n, 'f' || n, 3, 7, 'HTTP 500', now() - interval '1 hour', now() - n * interval '1 second'
       FROM generate_series(1, ${FAILED_ROWS}) AS n`,
  );
});

afterAll(async () => {
  await db?.drop();
});

describe('init on PostgreSQL', () => {
  it('creates the classic task table with its scan index and the audit table', async () => {
    const tables = await db.rows<{ t: string }>(
      `SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
    );
    expect(tables.map((r) => r.t)).toEqual(expect.arrayContaining(['async_task', 'taskrecon_audit']));
    const columns = await db.rows<{ c: string; t: string }>(
      `SELECT column_name AS c, data_type AS t FROM information_schema.columns WHERE table_name = 'async_task'`,
    );
    const types = Object.fromEntries(columns.map((r) => [r.c, r.t]));
    expect(types).toMatchObject({
      status: 'smallint',
      next_retry_time: 'timestamp with time zone',
      updated_at: 'timestamp with time zone',
      payload: 'jsonb',
    });
    const indexes = await db.rows<{ d: string }>(
      `SELECT indexdef AS d FROM pg_indexes WHERE tablename = 'async_task'`,
    );
    const defs = indexes.map((r) => r.d).join('\n');
    expect(defs).toMatch(/UNIQUE INDEX .* \(event_id\)/);
    expect(defs).toMatch(/\(status, next_retry_time, id\)/);
  });

  it('prints PostgreSQL DDL with --print', async () => {
    const printed = await runCli(['init', '--print'], { cwd });
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toContain('CREATE TABLE IF NOT EXISTS "async_task"');
    expect(printed.stdout).toMatch(/status SMALLINT/);
    expect(printed.stdout).toMatch(/TIMESTAMPTZ/);
    expect(printed.stdout).not.toMatch(/ENGINE=InnoDB|AUTO_INCREMENT|`/);
  });

  it('creates a schema-qualified table and scans it', async () => {
    await db.sql.query('CREATE SCHEMA IF NOT EXISTS ops');
    const init = await runCli(['init', '--table', 'ops.async_task'], { cwd });
    expect(init.code, init.stderr).toBe(0);
    await db.sql.query(
      `INSERT INTO ops.async_task (biz_type, biz_id, event_id, status, next_retry_time) VALUES ('coupon', 'o1', 'o1', 0, now() - interval '1 minute')`,
    );
    const { code, json } = await runJson<ScanJson>(['scan', '--table', 'ops.async_task'], { cwd });
    expect(code).toBe(0);
    expect(json.summary.total).toBe(1);
    expect(json.due.map((t) => t.bizId)).toEqual(['o1']);
  });
});

describe('scan on PostgreSQL', () => {
  it('counts and lists due and stuck rows as SQL ground truth says, with the client 8 hours from the server', async () => {
    const { code, json } = await runJson<ScanJson>(['scan', '--limit', '0'], {
      cwd,
      env: { TZ: CLIENT_ZONE },
    });
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    const [truth] = await db.rows<{ due: string; stuck: string; total: string }>(
      `SELECT count(*) FILTER (WHERE status = 0 AND next_retry_time <= now()) AS due,
              count(*) FILTER (WHERE status = 1 AND updated_at <= now() - interval '600 seconds') AS stuck,
              count(*) AS total
         FROM async_task`,
    );
    expect(json.summary.total).toBe(Number(truth?.total));
    expect(json.summary.due).toBe(Number(truth?.due));
    expect(json.summary.stuck).toBe(Number(truth?.stuck));
    expect(json.summary.byStatus).toMatchObject({
      pending: 3,
      processing: 2,
      success: 1,
      failed: FAILED_ROWS,
      compensated: 1,
    });
    const dueTruth = await db.rows<{ b: string }>(
      `SELECT biz_id AS b FROM async_task WHERE status = 0 AND next_retry_time <= now() ORDER BY next_retry_time, id`,
    );
    const stuckTruth = await db.rows<{ b: string }>(
      `SELECT biz_id AS b FROM async_task WHERE status = 1 AND updated_at <= now() - interval '600 seconds' ORDER BY id`,
    );
    expect(json.due.map((t) => t.bizId)).toEqual(dueTruth.map((r) => r.b));
    expect(json.due.map((t) => t.bizId)).toEqual(['due-old', 'due-1']);
    expect(json.stuck.map((t) => t.bizId)).toEqual(stuckTruth.map((r) => r.b));
    expect(json.stuck.map((t) => t.bizId)).toEqual(['stuck']);
    expect(json.summary.oldestDueSeconds).toBeGreaterThanOrEqual(7200);
    expect(json.summary.oldestDueSeconds).toBeLessThan(7260);
  });

  it('reads times as the instants stored, whatever the client zone', async () => {
    const { json } = await runJson<ScanJson>(['scan'], { cwd, env: { TZ: CLIENT_ZONE } });
    const [row] = await db.rows<{ epoch: string }>(
      `SELECT FLOOR(EXTRACT(EPOCH FROM next_retry_time))::bigint AS epoch FROM async_task WHERE biz_id = 'due-old'`,
    );
    const listed = json.due.find((t) => t.bizId === 'due-old');
    expect(Date.parse(listed?.nextRetryAt ?? '') / 1000).toBe(Number(row?.epoch));
  });

  it('does not call an in-flight processing row (recent updated_at, old next_retry_time) stuck', async () => {
    const { json } = await runJson<ScanJson>(['scan'], { cwd, env: { TZ: CLIENT_ZONE } });
    expect(json.stuck.map((t) => t.bizId)).not.toContain('in-flight');
    const wide = await runJson<ScanJson>(['scan', '--stuck-after', '20s'], { cwd });
    expect(wide.json.stuck.map((t) => t.bizId).sort()).toEqual(['in-flight', 'stuck']);
  });

  it('streams every failed row as NDJSON', async () => {
    const ndjson = await runCli(['scan', '--limit', '0', '--format', 'ndjson'], {
      cwd,
      env: { TZ: CLIENT_ZONE },
    });
    expect(ndjson.code, ndjson.stderr).toBe(0);
    const lines = ndjson.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { list: string; bizId: string; status: string });
    const failed = lines.filter((l) => l.list === 'failed');
    expect(failed).toHaveLength(FAILED_ROWS);
    expect(new Set(failed.map((l) => l.bizId)).size).toBe(FAILED_ROWS);
    expect(failed.every((l) => l.status === 'failed')).toBe(true);
  });
});

describe('show on PostgreSQL', () => {
  it('shows one task by id', async () => {
    const [row] = await db.rows<{ id: string }>(`SELECT id FROM async_task WHERE biz_id = 'due-1'`);
    const { code, json } = await runJson<{ task: TaskJson; payload: unknown }>(['show', String(row?.id)], {
      cwd,
    });
    expect(code).toBe(0);
    expect(json.task).toMatchObject({
      id: Number(row?.id),
      bizId: 'due-1',
      eventId: 'e1',
      status: 'pending',
      attempts: 1,
      lastError: 'timeout',
    });
    const missing = await runCli(['show', '999999'], { cwd });
    expect(missing.code).not.toBe(0);
  });
});

describe('doctor on PostgreSQL', () => {
  it('reports the server version and the scan index', async () => {
    const result = await runCli(['doctor'], { cwd });
    expect(result.stdout).toMatch(/server version\s+PostgreSQL 1\d/);
    expect(result.stdout).toMatch(/scan index\s+idx_async_task_status_next_retry/);
    expect(result.stdout).toMatch(/event id unique\s/);
  });
});
