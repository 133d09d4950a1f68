import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { builtinProfile } from '../../src/db/profiles/registry.js';
import type { Db } from '../../src/db/types.js';
import { pitfallChecks } from '../../src/verbs/doctor/pitfalls.js';
import { runJson } from '../support/cli.js';
import { createFixtureTable } from '../support/fixtures.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

// doctor's checks for the classic design's pitfalls: each planted case flagged, each healthy one not.
let schema: TestSchema;
let db: Db;

interface DoctorJson {
  checks: Array<{ name: string; status: string; message: string; hint: string | null }>;
}
const doctor = async (...args: string[]) =>
  (await runJson<DoctorJson>(['doctor', '--db', schema.dsn, ...args])).json.checks;
const named = (checks: DoctorJson['checks'], name: string) => checks.find((c) => c.name === name);

const TABLE = (name: string, unique: boolean) => `CREATE TABLE ${name} (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, biz_type VARCHAR(32) NOT NULL, biz_id VARCHAR(64) NOT NULL,
  event_id VARCHAR(64) NOT NULL, payload JSON NULL, status TINYINT NOT NULL DEFAULT 0, retry_count INT NOT NULL DEFAULT 0,
  next_retry_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, last_error VARCHAR(512) NULL,
  created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  ${unique ? 'UNIQUE KEY uk_event_id (event_id),' : ''} KEY idx_status_next_retry (status, next_retry_time), KEY idx_biz (biz_type, biz_id))`;

beforeAll(async () => {
  schema = await createTestSchema('oncall_doctor');
  await schema.sql.query(TABLE('async_task', true));
  await schema.sql.query(TABLE('sloppy_task', false));
  const rows = (minuteOnly: boolean) =>
    Array.from(
      { length: 40 },
      (_, i) =>
        `('coupon', 'B${i}', 'e${i}', 0, '2026-11-29 08:${String(i).padStart(2, '0')}:${minuteOnly ? '00' : String((i * 7) % 60).padStart(2, '0')}')`,
    ).join(',');
  const insert = 'INSERT INTO %s (biz_type, biz_id, event_id, status, next_retry_time) VALUES ';
  await schema.sql.query(insert.replace('%s', 'async_task') + rows(false));
  await schema.sql.query(insert.replace('%s', 'sloppy_task') + rows(true));
  await createFixtureTable(schema, 'laravel_failed_jobs');
  await schema.sql.query('CREATE TABLE short_failed_jobs LIKE failed_jobs');
  await schema.sql.query('ALTER TABLE short_failed_jobs MODIFY payload TEXT NOT NULL');
  db = await connect(schema.dsn, {});
}, 60_000);

afterAll(async () => {
  await db?.close();
  await schema?.drop();
});

describe('doctor on the pitfalls of the classic task table', () => {
  it('a healthy table: seconds in retry times, a UNIQUE event id, wait_timeout above the lease', async () => {
    const checks = await doctor();
    expect(named(checks, 'retry time seconds')?.status).toBe('ok');
    expect(named(checks, 'event id unique')?.status).toBe('ok');
    expect(named(checks, 'wait timeout')?.status).toBe('ok');
  });

  it("flags retry times written without seconds ('Y-m-d H:i') and an event id with no UNIQUE key", async () => {
    const checks = await doctor('--profile', 'async-task', '--table', 'sloppy_task');
    expect(named(checks, 'retry time seconds')).toMatchObject({ status: 'warn' });
    expect(named(checks, 'retry time seconds')?.message).toContain('40 of the newest 40 rows');
    expect(named(checks, 'event id unique')).toMatchObject({ status: 'warn' });
    expect(named(checks, 'event id unique')?.hint).toContain('ADD UNIQUE KEY');
  });

  it('flags a failed-job payload column shorter than LONGTEXT, not the one Laravel creates', async () => {
    const good = await doctor('--profile', 'laravel-failed-jobs');
    expect(named(good, 'payload length')?.status).toBe('ok');
    const short = await doctor('--profile', 'laravel-failed-jobs', '--table', 'short_failed_jobs');
    expect(named(short, 'payload length')).toMatchObject({ status: 'warn' });
    expect(named(short, 'payload length')?.hint).toContain('LONGTEXT');
  });

  it("warns when the server's wait_timeout is shorter than the lease", async () => {
    const source = await inspectSource(db, builtinProfile('async-task'), 'async-task');
    const checks = await pitfallChecks(source, { leaseSeconds: 10_000_000 });
    expect(checks.find((c) => c.name === 'wait timeout')).toMatchObject({ status: 'warn' });
  });
});
