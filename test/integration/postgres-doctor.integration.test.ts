import pg, { type Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { configDir } from '../fixtures/redrive/seed.js';

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  hint: string | null;
  explain?: Array<{ name: string; indexes: string[]; fullScan: boolean; summary?: string[] }>;
}
interface DoctorJson {
  status: string;
  checks: Check[];
}

let db: PgTestDatabase;
let cwd: string;

beforeAll(async () => {
  db = await createPgDatabase('pg_doctor');
  cwd = configDir(`db: ${db.dsn}\n`);
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  await db?.drop();
});

async function doctor(args: string[], dir = cwd): Promise<DoctorJson> {
  const { json, stderr } = await runJson<DoctorJson>(['doctor', ...args], { cwd: dir });
  assertMatchesSchema('doctor', json);
  expect(json.checks.length, stderr).toBeGreaterThan(0);
  return json;
}

const find = (json: DoctorJson, name: string): Check | undefined => json.checks.find((c) => c.name === name);
const named = (json: DoctorJson, name: string): Check => {
  const found = find(json, name);
  if (!found) throw new Error(`no ${name} check in ${json.checks.map((c) => c.name).join(', ')}`);
  return found;
};

/** Flushes this session's pending statistics, then waits until `ready` holds for the table's row. */
async function statsOf(
  table: string,
  ready: (row: { dead: number; live: number }) => boolean,
): Promise<{ dead: number; live: number }> {
  for (let i = 0; i < 100; i++) {
    await db.sql.query('SELECT pg_stat_force_next_flush()');
    const [row] = await db.rows<{ dead: string; live: string }>(
      `SELECT n_dead_tup AS dead, n_live_tup AS live FROM pg_stat_user_tables WHERE relid = to_regclass($1)`,
      [table],
    );
    const counts = { dead: Number(row?.dead ?? 0), live: Number(row?.live ?? 0) };
    if (ready(counts)) return counts;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the statistics of ${table} never settled`);
}

describe('doctor on a healthy PostgreSQL task table', () => {
  it('reports no bloat, no long transaction, no wall-clock column, and plans as readable lines', async () => {
    const json = await doctor([]);
    expect(named(json, 'table bloat')).toMatchObject({ status: 'ok' });
    expect(named(json, 'long transactions')).toMatchObject({ status: 'ok' });
    expect(find(json, 'time column type')).toBeUndefined();
    const plans = named(json, 'scan index').explain ?? [];
    const due = plans.find((p) => p.name === 'due count');
    expect(due?.summary?.join('\n')).toMatch(/Scan.* on async_task/);

    const text = await runCli(['doctor'], { cwd });
    expect(text.stdout).toMatch(/ok\s+table bloat\s+async_task: 0 dead row versions/);
    expect(text.stdout).toMatch(/ok\s+long transactions\s+no transaction/);
    // The plan is EXPLAIN's shape, not its JSON.
    expect(text.stdout).toMatch(/^\s+(Aggregate|Limit)\b.*\(rows=\d+\)$/m);
    expect(text.stdout).toMatch(/^\s+-> (Index Scan using|Index Only Scan using|Seq Scan on|Bitmap)/m);
    expect(text.stdout).not.toContain('"Node Type"');
  });
});

describe('table bloat', () => {
  it('warns when dead row versions of a schema-qualified task table pass the threshold, and not after VACUUM', async () => {
    await db.sql.query('CREATE SCHEMA app');
    const init = await runCli(['init', '--table', 'app.hot_task'], { cwd });
    expect(init.code, init.stderr).toBe(0);
    await db.sql.query('ALTER TABLE app.hot_task SET (autovacuum_enabled = false)');
    await db.sql.query(
      `INSERT INTO app.hot_task (biz_type, biz_id, event_id, status, next_retry_time, created_at, updated_at)
       SELECT 'coupon', 'b' || n, 'e' || n, 0, now(), now(), now() FROM generate_series(1, 20000) AS n`,
    );
    // Two attempts on every row: each update leaves the old version behind.
    await db.sql.query('UPDATE app.hot_task SET retry_count = retry_count + 1');
    await db.sql.query('UPDATE app.hot_task SET retry_count = retry_count + 1');
    await statsOf('app.hot_task', (s) => s.dead >= 40_000);

    const json = await doctor(['--table', 'app.hot_task']);
    const bloat = named(json, 'table bloat');
    expect(bloat.status).toBe('warn');
    expect(bloat.message).toMatch(/^app\.hot_task: 40,000 dead row versions \(200% of 20,000 live\)/);
    expect(bloat.message).toContain('autovacuum is off for this table');
    expect(bloat.hint).toContain(
      'ALTER TABLE "app"."hot_task" SET (autovacuum_enabled = true, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);',
    );
    expect(bloat.hint).toContain('VACUUM (ANALYZE) "app"."hot_task";');

    // The fix as printed: both statements run, and doctor is satisfied.
    await db.sql.query(
      'ALTER TABLE "app"."hot_task" SET (autovacuum_enabled = true, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000)',
    );
    await db.sql.query('VACUUM (ANALYZE) "app"."hot_task"');
    await statsOf('app.hot_task', (s) => s.dead === 0);
    const after = named(await doctor(['--table', 'app.hot_task']), 'table bloat');
    expect(after.status).toBe('ok');
    expect(after.message).toMatch(/0 dead row versions .*last vacuum \d+s ago/);
  });

  it('does not warn about dead rows below the row floor, whatever their share', async () => {
    const init = await runCli(['init', '--table', 'small_task'], { cwd });
    expect(init.code, init.stderr).toBe(0);
    await db.sql.query('ALTER TABLE small_task SET (autovacuum_enabled = false)');
    await db.sql.query(
      `INSERT INTO small_task (biz_type, biz_id, event_id, status, next_retry_time, created_at, updated_at)
       SELECT 'coupon', 'b' || n, 'e' || n, 0, now(), now(), now() FROM generate_series(1, 1000) AS n`,
    );
    await db.sql.query('UPDATE small_task SET retry_count = retry_count + 1');
    await statsOf('small_task', (s) => s.dead >= 1000);
    const bloat = named(await doctor(['--table', 'small_task']), 'table bloat');
    expect(bloat.status).toBe('ok');
    expect(bloat.message).toMatch(/1,000 dead row versions \(100% of 1,000 live\)/);
  });
});

describe('long transactions', () => {
  let other: Client;

  afterAll(async () => {
    await other?.end().catch(() => undefined);
  });

  it('reports another session holding a transaction open past the threshold, and not once it ends', async () => {
    other = new pg.Client({ connectionString: db.dsn, application_name: 'forgotten-report' });
    await other.connect();
    const [backend] = (await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
    await other.query('BEGIN');
    await other.query('SELECT txid_current()');
    await new Promise((resolve) => setTimeout(resolve, 2200));

    // The default threshold (10m) is not reached.
    expect(named(await doctor([]), 'long transactions').status).toBe('ok');

    const json = await doctor(['--long-transaction', '2s']);
    const long = named(json, 'long transactions');
    expect(long.status).toBe('warn');
    expect(long.message).toMatch(/^1 transaction open longer than 2s holds back vacuum: /);
    expect(long.message).toContain(`pid ${backend?.pid}, open `);
    expect(long.message).toContain('idle in transaction');
    expect(long.message).toContain('application forgotten-report');
    expect(long.message).toContain('last statement: SELECT txid_current()');
    expect(long.hint).toMatch(/idle_in_transaction_session_timeout/);
    const text = await runCli(['doctor', '--long-transaction', '2s'], { cwd });
    expect(text.stdout).toMatch(/WARN\s+long transactions\s+1 transaction open longer than 2s/);

    await other.query('ROLLBACK');
    expect(named(await doctor(['--long-transaction', '2s']), 'long transactions')).toMatchObject({
      status: 'ok',
      message: 'no transaction on this database has been open longer than 2s',
    });
  });

  it('refuses a threshold that is not a duration', async () => {
    const result = await runCli(['doctor', '--long-transaction', 'soon'], { cwd });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/--long-transaction: 'soon' is not a duration/);
  });
});

describe('timestamp without time zone', () => {
  it('warns naming the wall-clock columns with the ALTER that makes them timestamptz, and not after it', async () => {
    await db.sql.query(`
      CREATE TABLE wall_task (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, biz_type varchar(32) NOT NULL, biz_id varchar(64) NOT NULL,
        event_id varchar(64) NOT NULL UNIQUE, payload jsonb, status smallint NOT NULL DEFAULT 0, retry_count int NOT NULL DEFAULT 0,
        next_retry_time timestamp NOT NULL, last_error varchar(512), created_at timestamp NOT NULL, updated_at timestamp NOT NULL);
      CREATE INDEX idx_wall_status_next_retry ON wall_task (status, next_retry_time);
      INSERT INTO wall_task (biz_type, biz_id, event_id, status, next_retry_time, created_at, updated_at)
        VALUES ('c', 'due', 'w1', 0, '2026-01-01 08:00:00', '2026-01-01 07:00:00', '2026-01-01 07:00:00');`);
    const shanghai = configDir(`db: ${db.dsn}\nappTimeZone: Asia/Shanghai\n`);
    const json = await doctor(['--table', 'wall_task'], shanghai);
    const wall = named(json, 'time column type');
    expect(wall.status).toBe('warn');
    expect(wall.message).toMatch(
      /^next_retry_time, created_at, updated_at are timestamp without time zone: wall-clock times that taskrecon reads in Asia\/Shanghai/,
    );
    const statement =
      'ALTER TABLE "wall_task" ' +
      ['next_retry_time', 'created_at', 'updated_at']
        .map((c) => `ALTER COLUMN "${c}" TYPE timestamptz USING "${c}" AT TIME ZONE 'Asia/Shanghai'`)
        .join(', ') +
      ';';
    expect(wall.hint).toContain(statement);

    // The fix as printed: the values keep their instant (08:00 in Shanghai is 00:00 UTC).
    await db.sql.query(statement);
    const [row] = await db.rows<{ t: string }>(
      `SELECT to_char(next_retry_time AT TIME ZONE 'UTC', 'HH24:MI') AS t FROM wall_task`,
    );
    expect(row?.t).toBe('00:00');
    const after = await doctor(['--table', 'wall_task'], shanghai);
    expect(find(after, 'time column type')).toBeUndefined();
    expect(named(after, 'time zones').message).toMatch(/TIMESTAMP columns/);
  });
});

describe('the scan index on PostgreSQL', () => {
  it('recommends a CREATE INDEX that PostgreSQL runs, after which the check passes and the plan reads it', async () => {
    const init = await runCli(['init', '--table', 'plain_task'], { cwd });
    expect(init.code, init.stderr).toBe(0);
    const [index] = await db.rows<{ name: string }>(
      `SELECT indexname AS name FROM pg_indexes WHERE tablename = 'plain_task' AND indexdef LIKE '%(status, next_retry_time, id)%'`,
    );
    expect(index?.name).toBeDefined();
    await db.sql.query(`DROP INDEX "${index?.name}"`);
    await db.sql.query(
      `INSERT INTO plain_task (biz_type, biz_id, event_id, status, next_retry_time, created_at, updated_at)
       SELECT 'coupon', 'b' || n, 'e' || n, CASE WHEN n % 500 = 0 THEN 0 ELSE 2 END, now() - interval '1 minute', now(), now()
         FROM generate_series(1, 20000) AS n`,
    );
    await db.sql.query('ANALYZE plain_task');

    // Index names are per schema on PostgreSQL: another table's index of the name MySQL would use
    // must not stop the recommended one (named after its table) from being created.
    await db.sql.query('CREATE TABLE other_task (status smallint, next_retry_time timestamptz, id bigint)');
    await db.sql.query('CREATE INDEX idx_status_next_retry ON other_task (status, next_retry_time, id)');
    const before = named(await doctor(['--table', 'plain_task']), 'scan index');
    expect(before.status).toBe('fail');
    expect(before.hint).toBe(
      'CREATE INDEX "idx_plain_task_status_next_retry" ON "plain_task" ("status", "next_retry_time", "id");',
    );
    await db.sql.query(before.hint ?? '');
    await db.sql.query('ANALYZE plain_task');

    const after = named(await doctor(['--table', 'plain_task']), 'scan index');
    expect(after.status).toBe('ok');
    expect(after.message).toMatch(/^idx_plain_task_status_next_retry \(status, next_retry_time, id\) serves/);
    const due = after.explain?.find((p) => p.name === 'due count');
    expect(due?.indexes).toContain('idx_plain_task_status_next_retry');
    expect(due?.summary?.join('\n')).toMatch(
      /(Index|Index Only) Scan using idx_plain_task_status_next_retry on plain_task/,
    );
    const text = await runCli(['doctor', '--table', 'plain_task'], { cwd });
    expect(text.stdout).toMatch(/Scan using idx_plain_task_status_next_retry on plain_task/);
  });
});

describe('event id uniqueness on PostgreSQL', () => {
  it('recommends a UNIQUE constraint in PostgreSQL syntax that runs, after which the check passes', async () => {
    await db.sql.query(`
      CREATE TABLE dup_task (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, biz_type varchar(32) NOT NULL, biz_id varchar(64) NOT NULL,
        event_id varchar(64) NOT NULL, payload jsonb, status smallint NOT NULL DEFAULT 0, retry_count int NOT NULL DEFAULT 0,
        next_retry_time timestamptz NOT NULL, last_error varchar(512), created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
      CREATE INDEX idx_dup_status_next_retry ON dup_task (status, next_retry_time);`);
    const before = named(await doctor(['--table', 'dup_task']), 'event id unique');
    expect(before.status).toBe('warn');
    const statement = 'ALTER TABLE "dup_task" ADD CONSTRAINT "uk_event_id" UNIQUE ("event_id");';
    expect(before.hint).toBe(`Add one once duplicates are resolved: ${statement}`);
    await db.sql.query(statement);
    expect(named(await doctor(['--table', 'dup_task']), 'event id unique').status).toBe('ok');
  });
});
