import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { startPgCluster, type PgCluster } from '../support/postgres-cluster.js';

/**
 * What the shared server cannot show: a cluster of the test's own that checks passwords
 * (scram-sha-256), that the test takes down in the middle of a redrive, and whose default
 * TimeZone is not UTC.
 */
interface RedriveJson {
  claimed: number;
  succeeded: number;
  recoveredStuck: number;
}

const WRONG = 'not-the-password-7d1e';
const TASKS = 3000;
const LEASE_SECONDS = 4;
/** The cluster's default TimeZone. */
const SERVER_ZONE = 'Asia/Tokyo';

let cluster: PgCluster;
let sql: Client;
let cwd: string;
/** Holds every config dir of this file; removed in afterAll. */
let configs: string;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function configIn(dir: string, db: string, handler: string): string {
  writeFileSync(join(dir, 'taskrecon.config.yaml'), `db: ${db}\nhandlers:\n  default: ${handler}\n`);
  return dir;
}

async function statusCounts(): Promise<Record<string, number>> {
  const rows = (
    await sql.query<{ status: number; n: string }>(
      'SELECT status, count(*) AS n FROM async_task GROUP BY status ORDER BY status',
    )
  ).rows;
  return Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
}

beforeAll(async () => {
  configs = mkdtempSync(join(tmpdir(), 'taskrecon-pgcluster-configs-'));
  cluster = await startPgCluster({ settings: { timezone: SERVER_ZONE } });
  const admin = await cluster.connect();
  await admin.query('CREATE DATABASE shop');
  await admin.end();
  sql = await cluster.connect('shop');
  cwd = configIn(
    mkdtempSync(join(configs, 'taskrecon-pgcluster-cfg-')),
    cluster.dsn('shop'),
    '{ type: mark-only }',
  );
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await sql?.end().catch(() => undefined);
  cluster?.destroy();
  if (configs) rmSync(configs, { recursive: true, force: true });
});

describe('a wrong password, on a server that checks it', () => {
  it('exits 3 naming the authentication failure, the password masked, nothing written', async () => {
    await sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time, created_at, updated_at)
       VALUES ('coupon', 'order-pw', 'pw-0', 0, now() - interval '1 minute', now() - interval '1 hour', now() - interval '1 hour')`,
    );
    const before = (await sql.query('SELECT * FROM async_task ORDER BY id')).rows;
    const bad = cluster.dsn('shop', WRONG);
    for (const args of [['scan'], ['redrive', '--pause', '0ms'], ['init', '--table', 'never_created']]) {
      const result = await runCli([...args, '--db', bad], { cwd });
      expect(result.code, `${args[0]}: ${result.stderr}`).toBe(3);
      expect(result.stderr).toMatch(
        new RegExp(
          `cannot connect to postgres://${cluster.user}:\\*\\*\\*@127\\.0\\.0\\.1:${cluster.port}/shop: ` +
            `password authentication failed for user "${cluster.user}"`,
        ),
      );
      expect(result.stderr).toMatch(/user and password/);
      expect(result.stdout + result.stderr).not.toContain(WRONG);
      expect(result.stdout + result.stderr).not.toContain(cluster.password);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    expect((await sql.query('SELECT * FROM async_task ORDER BY id')).rows).toEqual(before);
    expect((await sql.query(`SELECT to_regclass('never_created') AS t`)).rows).toEqual([{ t: null }]);
    await sql.query(`DELETE FROM async_task WHERE event_id = 'pw-0'`);
  }, 120_000);
});

describe('PostgreSQL going down in the middle of a redrive', () => {
  it('exits 3 naming the lost connection; after a restart no row is half-written and a later redrive recovers the claimed ones', async () => {
    await sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at)
       SELECT 'coupon', 'order-' || n, 'down-' || n, jsonb_build_object('orderId', n), 0,
              now() - interval '1 minute', now() - interval '1 hour', now() - interval '1 hour'
         FROM generate_series(0, $1 - 1) AS n`,
      [TASKS],
    );
    const runsFile = join(cwd, 'runs.log');
    const slowCwd = configIn(
      mkdtempSync(join(configs, 'taskrecon-pgcluster-slow-')),
      cluster.dsn('shop'),
      `{ type: command, argv: [sh, -c, "echo {eventId} >> ${runsFile}; sleep 0.3"], timeout: 3s }`,
    );
    const redrive = runCli(
      ['redrive', '--lease', `${LEASE_SECONDS}s`, '--pause', '0ms', '--concurrency', '4', '--batch', '20'],
      { cwd: slowCwd, timeoutMs: 120_000 },
    );
    // The first claims are written and some tasks have run: then the server goes down at once.
    for (let i = 0; i < 200; i++) {
      const settled = await sql.query<{ n: string }>('SELECT count(*) AS n FROM async_task WHERE status = 2');
      if (Number(settled.rows[0]?.n) >= 4) break;
      await sleep(100);
    }
    await sql.end();
    cluster.crash();
    expect(cluster.pid()).toBeUndefined();

    const down = await redrive;
    expect(down.code, down.stderr).toBe(3);
    expect(down.stderr).toMatch(
      new RegExp(
        `(lost the connection to|cannot connect to) postgres://${cluster.user}:\\*\\*\\*@127\\.0\\.0\\.1:${cluster.port}/shop`,
      ),
    );
    expect(down.stderr).toMatch(
      /stay processing until their lease \(--lease\) passes; the next run recovers them/,
    );
    expect(down.stderr).not.toMatch(/shorter than the slowest handler/);
    expect(down.stdout + down.stderr).not.toContain(cluster.password);
    expect(down.stderr).not.toMatch(/\n\s+at /);

    cluster.start();
    sql = await cluster.connect('shop');
    const rows = (
      await sql.query<{
        event_id: string;
        status: number;
        retry_count: number;
        nrt: string;
        upd: string;
        created: string;
      }>(
        `SELECT event_id, status, retry_count, extract(epoch FROM next_retry_time)::bigint AS nrt,
                extract(epoch FROM updated_at)::bigint AS upd, extract(epoch FROM created_at)::bigint AS created
           FROM async_task`,
      )
    ).rows;
    expect(rows).toHaveLength(TASKS);
    const ran = new Set(
      existsSync(runsFile) ? readFileSync(runsFile, 'utf8').split('\n').filter(Boolean) : [],
    );
    let processing = 0;
    for (const row of rows) {
      // Every row is in one of the states a claim or a settle writes whole.
      expect([0, 1, 2], row.event_id).toContain(row.status);
      if (row.status === 0) {
        // Never claimed: as seeded, due a minute before the run.
        expect([row.retry_count, Number(row.upd)], row.event_id).toEqual([0, Number(row.created)]);
      }
      if (row.status === 1) {
        // Claimed, not settled: processing under its lease, written with the claim.
        processing++;
        expect(Number(row.nrt) - Number(row.upd), row.event_id).toBeGreaterThan(0);
        expect(Number(row.nrt) - Number(row.upd), row.event_id).toBeLessThanOrEqual(LEASE_SECONDS);
      }
      // A success was run by the handler first.
      if (row.status === 2) expect(ran.has(row.event_id), row.event_id).toBe(true);
    }
    const counts = await statusCounts();
    expect(counts['2']).toBeGreaterThanOrEqual(4);
    expect(counts['0']).toBeGreaterThan(0);
    expect(processing).toBeGreaterThan(0);

    // Once the leases have passed, a later redrive takes the claimed rows over and settles every row.
    await sleep((LEASE_SECONDS + 2) * 1000);
    const again = await runJson<RedriveJson>(['redrive', '--stuck-after', '1s', '--pause', '0ms'], {
      cwd,
      timeoutMs: 120_000,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(again.json.recoveredStuck).toBe(processing);
    expect(await statusCounts()).toEqual({ '2': TASKS });
  }, 180_000);
});

describe('timestamp without time zone where init writes timestamptz', () => {
  it('reads wall-clock columns in appTimeZone; doctor fails the zone check only when it differs from the server', async () => {
    await sql.query(`
      CREATE TABLE wall_task (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, biz_type varchar(32) NOT NULL, biz_id varchar(64) NOT NULL,
        event_id varchar(64) NOT NULL UNIQUE, payload jsonb, status smallint NOT NULL DEFAULT 0, retry_count int NOT NULL DEFAULT 0,
        next_retry_time timestamp NOT NULL, last_error varchar(512), created_at timestamp NOT NULL, updated_at timestamp NOT NULL);
      CREATE INDEX idx_wall_status_next_retry ON wall_task (status, next_retry_time);`);
    // The app writes Tokyo wall-clock times, the server's own zone.
    await sql.query(`SET TimeZone = '${SERVER_ZONE}'`);
    await sql.query(`
      INSERT INTO wall_task (biz_type, biz_id, event_id, status, next_retry_time, created_at, updated_at) VALUES
        ('c', 'due', 'w1', 0, localtimestamp - interval '5 minutes', localtimestamp - interval '1 hour', localtimestamp - interval '1 hour'),
        ('c', 'not-due', 'w2', 0, localtimestamp + interval '5 minutes', localtimestamp - interval '1 hour', localtimestamp - interval '1 hour')`);
    await sql.query(`SET TimeZone = 'UTC'`);
    const dir = (zone?: string) =>
      configIn(
        mkdtempSync(join(configs, 'taskrecon-pgcluster-zone-')),
        `${cluster.dsn('shop')}\n${zone ? `appTimeZone: ${zone}` : ''}`,
        '{ type: mark-only }',
      );

    // appTimeZone names the server's zone (or is left out): the zone check passes, Tokyo times are read as Tokyo.
    for (const cwdZone of [dir(SERVER_ZONE), dir()]) {
      const doctor = await runCli(['doctor', '--table', 'wall_task'], { cwd: cwdZone });
      expect(doctor.stdout).toMatch(/time zones/);
      expect(doctor.stdout).not.toMatch(/FAIL\s+time zones/);
      const scan = await runJson<{ due: Array<{ bizId: string; nextRetryAt: string }> }>(
        ['scan', '--table', 'wall_task'],
        { cwd: cwdZone, env: { TZ: 'America/New_York' } },
      );
      expect(scan.code, scan.stderr).toBe(0);
      expect(scan.json.due.map((t) => t.bizId)).toEqual(['due']);
      const [row] = (
        await sql.query<{ epoch: string }>(
          `SELECT FLOOR(EXTRACT(EPOCH FROM next_retry_time AT TIME ZONE '${SERVER_ZONE}'))::bigint AS epoch
             FROM wall_task WHERE biz_id = 'due'`,
        )
      ).rows;
      expect(Date.parse(scan.json.due[0]?.nextRetryAt ?? '') / 1000).toBe(Number(row?.epoch));
    }

    // appTimeZone UTC, 9 hours behind the zone the values were written in: doctor fails the zone
    // check, and the values are read in UTC, so nothing is due yet.
    const utc = dir('UTC');
    const doctor = await runCli(['doctor', '--table', 'wall_task'], { cwd: utc });
    expect(doctor.stdout).toMatch(
      /FAIL\s+time zones\s+DATETIME columns \(next_retry_time, created_at, updated_at\)/,
    );
    expect(doctor.stdout).toMatch(/differs by 9h from appTimeZone UTC/);
    const scan = await runJson<{ due: unknown[] }>(['scan', '--table', 'wall_task'], { cwd: utc });
    expect(scan.code, scan.stderr).toBe(0);
    expect(scan.json.due).toEqual([]);

    // redrive in the server's zone claims the due row only and writes Tokyo wall-clock times.
    const redrive = await runJson<RedriveJson>(['redrive', '--table', 'wall_task', '--pause', '0ms'], {
      cwd: dir(SERVER_ZONE),
    });
    expect(redrive.code, redrive.stderr).toBe(0);
    expect(redrive.json).toMatchObject({ claimed: 1, succeeded: 1 });
    const settled = (
      await sql.query<{ biz_id: string; status: number; skew: string }>(
        `SELECT biz_id, status,
                abs(extract(epoch FROM updated_at - (now() AT TIME ZONE '${SERVER_ZONE}')))::int AS skew
           FROM wall_task ORDER BY id`,
      )
    ).rows;
    expect(settled.map((r) => [r.biz_id, r.status])).toEqual([
      ['due', 2],
      ['not-due', 0],
    ]);
    expect(Number(settled[0]?.skew)).toBeLessThan(60);
  }, 120_000);
});
