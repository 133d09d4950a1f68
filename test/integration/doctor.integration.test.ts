import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createFixtureTable } from '../support/fixtures.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  hint: string | null;
  explain?: Array<{ name: string; sql: string; fullScan: boolean; indexes: string[]; plan: object[] }>;
}
interface DoctorJson {
  status: string;
  checks: Check[];
  server: { engine: string; globalZone: string; sessionOffsetSeconds: number; skewSeconds: number };
}

let schema: TestSchema;
let laravel: TestSchema;
let cwd: string;

const byName = (json: DoctorJson, name: string): Check => {
  const found = json.checks.find((c) => c.name === name);
  if (!found) throw new Error(`no check '${name}' in ${json.checks.map((c) => c.name).join(', ')}`);
  return found;
};
const failed = (json: DoctorJson) => json.checks.filter((c) => c.status === 'fail').map((c) => c.name);

async function doctor(args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = await runJson<DoctorJson>(['doctor', ...args], { cwd, env });
  assertMatchesSchema('doctor', result.json);
  return result;
}

beforeAll(async () => {
  schema = await createTestSchema('doctor');
  laravel = await createTestSchema('doctor_laravel');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-doctor-'));
  const init = await runCli(['init', '--db', schema.dsn]);
  expect(init.code, init.stderr).toBe(0);
  // Broken on purpose: no (status, next_retry_time) index and a short last_error; a table lacking event_id.
  await schema.sql.query(`
    CREATE TABLE no_index LIKE async_task;
    ALTER TABLE no_index DROP INDEX idx_status_next_retry, MODIFY last_error VARCHAR(255) NULL;
    INSERT INTO no_index (biz_type, biz_id, event_id, status) VALUES ('sms', 'b1', 'e1', 0), ('sms', 'b2', 'e2', 1);
    CREATE TABLE no_event_id LIKE async_task;
    ALTER TABLE no_event_id DROP INDEX uk_event_id, DROP COLUMN event_id;`);
  await createFixtureTable(laravel, 'laravel_failed_jobs');
  await createFixtureTable(laravel, 'laravel_jobs');
  await createFixtureTable(laravel, 'job_retries');
});

afterAll(async () => {
  await schema?.drop();
  await laravel?.drop();
});

describe('doctor on MariaDB', () => {
  it('exits 0 on a healthy async_task table, every check ok, with the plan of the due count', async () => {
    const { code, json } = await doctor(['--db', schema.dsn]);
    expect(failed(json)).toEqual([]);
    expect(code).toBe(0);
    expect(json.status).toBe('ok');
    expect(json.server.engine).toBe('mysql');
    const index = byName(json, 'scan index');
    expect(index.status).toBe('ok');
    const due = index.explain?.find((p) => p.name === 'due count');
    expect(due?.sql).toContain('FROM `async_task`');
    expect(due?.plan.length).toBeGreaterThan(0);
    expect(byName(json, 'skip locked').status).toBe('ok');
    expect(byName(json, 'last_error length').status).toBe('ok');
    expect(byName(json, 'audit table').status).toBe('ok');
  });

  it('warns of a write-ahead intent a killed run left open, naming the run and the command that settles it', async () => {
    expect(byName((await doctor(['--db', schema.dsn])).json, 'open intents').status).toBe('ok');
    await schema.sql.query(
      `INSERT INTO taskrecon_intent (run_id, kind, source, from_ref, to_ref, operator, host, action, jobs, detail, state, opened_epoch)
       VALUES ('run-killed-1', 'redis-move', 'app', 'queues:old', 'queues:new', 'ops', 'h', 'queue-move', '[]', NULL, 'open', UNIX_TIMESTAMP())`,
    );
    const { code, json } = await doctor(['--db', schema.dsn]);
    const open = byName(json, 'open intents');
    expect(open.status).toBe('warn');
    expect(open.message).toContain('redis-move of run run-killed-1 on app (queues:old → queues:new)');
    expect(open.hint).toContain('queues move');
    expect(code).toBe(0);
    await schema.sql.query('DELETE FROM taskrecon_intent');
  });

  it('fails on a missing (status, next_retry_time) index, showing the EXPLAIN of the real scan query, and on a short last_error', async () => {
    const { code, json } = await doctor(['--db', schema.dsn, '--table', 'no_index']);
    expect(code).toBe(1);
    expect(failed(json).sort()).toEqual(['last_error length', 'scan index']);
    const index = byName(json, 'scan index');
    expect(index.message).toContain('(status, next_retry_time) index is missing');
    expect(index.hint).toContain('CREATE INDEX');
    const due = index.explain?.find((p) => p.name === 'due count');
    expect(due?.sql).toMatch(/FROM `no_index` WHERE .*`next_retry_time` <= FROM_UNIXTIME\(\?\)/);
    expect(due?.fullScan).toBe(true);
    const lastError = byName(json, 'last_error length');
    expect(lastError.message).toContain('varchar(255)');
    expect(lastError.hint).toContain('VARCHAR(512)');
    const human = await runCli(['doctor', '--db', schema.dsn, '--table', 'no_index'], { cwd });
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/FAIL\s+scan index/);
    expect(human.stdout).toContain('due count: reads the whole table');
    expect(human.stdout).toMatch(/fix:.*CREATE INDEX/);
  });

  it('fails on a column the profile maps but the table lacks, naming it', async () => {
    const { code, json } = await doctor(['--db', schema.dsn, '--table', 'no_event_id']);
    expect(code).toBe(1);
    const column = json.checks.find((c) => c.name === 'column' && c.status === 'fail');
    expect(column?.message).toContain("no column 'event_id'");
    expect(column?.hint).toContain('columns:');
  });

  it('fails on DATETIME columns when the server zone and appTimeZone disagree, and passes when they agree', async () => {
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${schema.dsn}\nappTimeZone: "+08:00"\n`);
    const mismatch = await doctor([], { TZ: 'America/New_York' });
    expect(mismatch.code).toBe(1);
    const zones = byName(mismatch.json, 'time zones');
    expect(zones.status).toBe('fail');
    expect(zones.message).toContain('server/app zone mismatch');
    expect(zones.message).toContain('next_retry_time');
    expect(zones.hint).toContain("time_zone='+08:00'");
    expect(mismatch.json.server.sessionOffsetSeconds).toBe(8 * 3600);
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${schema.dsn}\nappTimeZone: "+00:00"\n`);
    const agree = await doctor([], { TZ: 'America/New_York' });
    expect(byName(agree.json, 'time zones').status).toBe('ok');
    expect(agree.code).toBe(0);
    expect(Math.abs(agree.json.server.skewSeconds)).toBeLessThanOrEqual(2);
  });

  it("passes Laravel's failed_jobs (TIMESTAMP, primary-key lists) and warns that the audit table is missing", async () => {
    const { code, json } = await doctor(['--db', laravel.dsn, '--profile', 'laravel-failed-jobs']);
    expect(failed(json)).toEqual([]);
    expect(code).toBe(0);
    expect(byName(json, 'audit table').status).toBe('warn');
    expect(byName(json, 'audit table').hint).toContain('init --audit-only');
    expect(byName(json, 'time zones').message).toContain('TIMESTAMP or unix');
  });

  it("warns that Laravel's jobs table has no index for stuck reservations, and still exits 0", async () => {
    const { code, json } = await doctor(['--db', laravel.dsn, '--profile', 'laravel-jobs']);
    expect(code).toBe(0);
    expect(byName(json, 'scan index').status).toBe('warn');
    expect(byName(json, 'scan index').hint).toContain('(`reserved_at`, `available_at`)');
  });

  it("warns that the job_retries table's (next_retry_at, status) index serves the due scan only in part, and exits 0", async () => {
    const { code, json } = await doctor(['--db', laravel.dsn, '--profile', 'job-retries']);
    expect(failed(json)).toEqual([]);
    expect(code).toBe(0);
    const index = byName(json, 'scan index');
    expect(index.status).toBe('warn');
    expect(index.message).toContain('idx_next_retry (next_retry_at, status)');
    expect(index.hint).toContain('(`status`, `next_retry_at`)');
    expect(byName(json, 'status values').status).toBe('ok');
  });

  it('checks the indexes of the diff rules on the source: a warning with the DDL when one is missing', async () => {
    await schema.sql.query(
      'CREATE TABLE IF NOT EXISTS user_coupon (id BIGINT PRIMARY KEY AUTO_INCREMENT, order_id VARCHAR(64) NOT NULL)',
    );
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${schema.dsn}\nrules:\n  - { name: coupon-issued, bizType: coupon, business: { table: user_coupon, key: order_id } }\n`,
    );
    const missing = await doctor([]);
    expect(missing.code).toBe(0);
    const warned = missing.json.checks.filter((c) => c.name === 'diff rule index' && c.status === 'warn');
    expect(warned.map((c) => c.message).join('\n')).toContain('user_coupon (order_id)');
    expect(warned.map((c) => c.hint).join('\n')).toContain('CREATE INDEX');
    await schema.sql.query('CREATE INDEX idx_order ON user_coupon (order_id)');
    const present = await doctor([]);
    const business = present.json.checks.find(
      (c) => c.name === 'diff rule index' && c.message.includes('user_coupon'),
    );
    expect(business?.status).toBe('ok');
    expect(business?.message).toContain('idx_order');
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${schema.dsn}\n`);
  });

  it('fails on a missing table', async () => {
    const { code, json } = await doctor(['--db', schema.dsn, '--table', 'nope']);
    expect(code).toBe(1);
    expect(byName(json, 'table').message).toContain("table 'nope' does not exist");
  });
});

describe('doctor on SQLite', () => {
  it('exits 0 on a table init created, and explains the scan with EXPLAIN QUERY PLAN', async () => {
    const file = join(cwd, 'doctor.sqlite');
    const init = await runCli(['init', '--db', `sqlite:${file}`]);
    expect(init.code, init.stderr).toBe(0);
    const { code, json } = await doctor(['--db', `sqlite:${file}`]);
    expect(failed(json)).toEqual([]);
    expect(code).toBe(0);
    expect(json.server.engine).toBe('sqlite');
    const due = byName(json, 'scan index').explain?.find((p) => p.name === 'due count');
    expect(due?.fullScan).toBe(false);
    expect(due?.indexes.join()).toContain('status_next_retry');
  });
});
