import { rmSync } from 'node:fs';
import type { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configDir } from '../fixtures/redrive/seed.js';
import { runCli, runJson } from '../support/cli.js';
import { startPgCluster, startPgStandby, type PgCluster } from '../support/postgres-cluster.js';

/**
 * `readDb` pointing at a real PostgreSQL streaming replica: a throw-away primary cluster and a
 * standby made from it with `pg_basebackup -R` on another loopback port. Reads (scan, doctor's
 * figures) go to the replica — a row the primary committed is missing there while replay is
 * paused, and shows once it is replayed — and its lag is read from the WAL positions and
 * `pg_last_xact_replay_timestamp()`; writes (compensate, redrive) go to the primary.
 */
interface ScanJson {
  summary: { total: number };
  failed: Array<{ id: number; eventId: string }>;
  readReplicaLagSeconds?: number | null;
}
interface DoctorJson {
  checks: Array<{ name: string; status: string; message: string }>;
  readReplica?: { lagSeconds: number | null; running: boolean };
}

const DB = 'shop';
let primary: PgCluster;
let standby: PgCluster;
let onPrimary: Client;
let onStandby: Client;
let primaryDsn: string;
let standbyDsn: string;
const dirs: string[] = [];

/** Waits until `probe` holds (the standby replays asynchronously), at most 30 s. */
async function until(probe: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const hasEvent = async (client: Client, event: string) =>
  (await client.query<Record<string, unknown>>('SELECT 1 FROM async_task WHERE event_id = $1', [event])).rows
    .length > 0;

function cwdWith(yaml: string): string {
  const cwd = configDir(yaml);
  dirs.push(cwd);
  return cwd;
}

beforeAll(async () => {
  primary = await startPgCluster();
  const admin = await primary.connect();
  try {
    await admin.query(`CREATE DATABASE ${DB}`);
  } finally {
    await admin.end();
  }
  primaryDsn = primary.dsn(DB);
  const init = await runCli(['init', '--db', primaryDsn]);
  expect(init.code, init.stderr).toBe(0);
  onPrimary = await primary.connect(DB);
  await onPrimary.query<Record<string, unknown>>(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time)
     SELECT 'coupon', 'order-' || n, CASE WHEN n < 3 THEN 'dead-' || n ELSE 'done-' || n END,
            CASE WHEN n < 3 THEN 3 ELSE 2 END, now() - interval '1 minute'
       FROM generate_series(0, 6) AS n`,
  );
  standby = await startPgStandby(primary);
  standbyDsn = standby.dsn(DB);
  onStandby = await standby.connect(DB);
  // One transaction after the base backup, so the standby has replayed a commit (whose time its
  // lag is measured from once it falls behind).
  await onPrimary.query<Record<string, unknown>>(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ('coupon', 'order-7', 'done-7', 2)`,
  );
  await until(async () => hasEvent(onStandby, 'done-7'), 'the standby to replay the seed');
}, 120_000);

afterAll(async () => {
  await onStandby?.end().catch(() => undefined);
  standby?.destroy();
  primary?.destroy();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a PostgreSQL streaming replica as the read replica', () => {
  it('is a standby of the primary on another port, streaming', async () => {
    expect(standby.port).not.toBe(primary.port);
    const [row] = (
      await onStandby.query<Record<string, unknown>>(
        `SELECT pg_is_in_recovery() AS recovery, (SELECT status FROM pg_stat_wal_receiver) AS receiver`,
      )
    ).rows as Array<{ recovery: boolean; receiver: string }>;
    expect(row).toEqual({ recovery: true, receiver: 'streaming' });
  });

  it('doctor reports a caught-up replica 0s behind, and scan says its figures come from it', async () => {
    // Idle for a while: the last replayed transaction ages, yet nothing is missing.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const doctor = await runJson<DoctorJson>(['doctor', '--db', primaryDsn, '--read-db', standbyDsn]);
    const check = doctor.json.checks.find((c) => c.name === 'read replica');
    expect(check?.status, JSON.stringify(check)).toBe('ok');
    expect(check?.message).toMatch(/is 0s behind the primary/);
    expect(doctor.json.readReplica).toMatchObject({ lagSeconds: 0, running: true });
    const scan = await runJson<ScanJson>(['scan', '--db', primaryDsn, '--read-db', standbyDsn]);
    expect(scan.code, scan.stderr).toBe(0);
    expect(scan.json.summary.total).toBe(8);
    expect(scan.json.readReplicaLagSeconds).toBe(0);
    expect(scan.stderr).toMatch(/figures read from the replica .*\(no replication lag\)/);
  });

  it('doctor fails a --read-db that is no replica at all', async () => {
    const doctor = await runJson<DoctorJson>(['doctor', '--db', primaryDsn, '--read-db', primaryDsn]);
    const check = doctor.json.checks.find((c) => c.name === 'read replica');
    expect(check?.status).toBe('fail');
    expect(check?.message).toMatch(/not a replica \(pg_is_in_recovery\(\) is false\)/);
  });

  describe('with replay paused on the replica', () => {
    beforeAll(async () => {
      await onStandby.query<Record<string, unknown>>('SELECT pg_wal_replay_pause()');
      await onPrimary.query<Record<string, unknown>>(
        `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time)
         VALUES ('coupon', 'order-p', 'primary-only', 3, now() - interval '1 minute')`,
      );
      // Received but not replayed: the replica is behind by the age of its last replayed transaction.
      await until(
        async () =>
          (
            await onStandby.query<Record<string, unknown>>(
              'SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn() AS behind',
            )
          ).rows[0]?.behind === true,
        'the standby to receive the new WAL',
      );
    });

    it('scan reads the replica (the new row is not there yet) and reports its lag; without --read-db it reads the primary', async () => {
      const scan = await runJson<ScanJson>(['scan', '--db', primaryDsn, '--read-db', standbyDsn]);
      expect(scan.code, scan.stderr).toBe(0);
      expect(scan.json.failed.map((t) => t.eventId)).not.toContain('primary-only');
      expect(scan.json.summary.total).toBe(8);
      const lag = scan.json.readReplicaLagSeconds;
      const [row] = (
        await onStandby.query<Record<string, unknown>>(
          'SELECT FLOOR(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()))::int AS age',
        )
      ).rows as Array<{ age: number }>;
      // The age of the last replayed transaction, read by scan a moment before this query.
      expect(lag).toBeGreaterThanOrEqual(1);
      expect(lag).toBeLessThanOrEqual(Number(row?.age));
      expect(scan.stderr).toMatch(new RegExp(`which is ${String(lag)}s behind the primary`));
      const fromPrimary = await runJson<ScanJson>(['scan', '--db', primaryDsn]);
      expect(fromPrimary.json.failed.map((t) => t.eventId)).toContain('primary-only');
      expect(fromPrimary.json.summary.total).toBe(9);
      expect(fromPrimary.json.readReplicaLagSeconds).toBeUndefined();
    });

    it('takes the replica from config readDb too', async () => {
      const cwd = cwdWith(`db: ${primaryDsn}\nreadDb: ${standbyDsn}\n`);
      const scan = await runJson<ScanJson>(['scan'], { cwd });
      expect(scan.code, scan.stderr).toBe(0);
      expect(scan.json.failed.map((t) => t.eventId)).not.toContain('primary-only');
      expect(scan.json.readReplicaLagSeconds).toBeGreaterThanOrEqual(1);
    });

    it('compensate writes to the primary, never the replica', async () => {
      const [target] = (
        await onPrimary.query<Record<string, unknown>>(`SELECT id FROM async_task WHERE event_id = 'dead-0'`)
      ).rows as Array<{ id: string }>;
      const run = await runJson<{ applied: number }>([
        'compensate',
        String(target?.id),
        '--db',
        primaryDsn,
        '--read-db',
        standbyDsn,
        '--action',
        'mark-compensated',
        '--reason',
        'replica test',
        '--yes',
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.json.applied).toBe(1);
      const status = async (client: Client) =>
        Number(
          (
            await client.query<Record<string, unknown>>(
              `SELECT status FROM async_task WHERE event_id = 'dead-0'`,
            )
          ).rows[0]?.status,
        );
      expect(await status(onPrimary)).toBe(4);
      expect(
        Number(
          (await onPrimary.query<Record<string, unknown>>('SELECT count(*) AS n FROM taskrecon_audit'))
            .rows[0]?.n,
        ),
      ).toBe(1);
      // Replay is paused: the replica still has the old row.
      expect(await status(onStandby)).toBe(3);
    });

    it('redrive claims and settles on the primary with a replica configured', async () => {
      await onPrimary.query<Record<string, unknown>>(
        `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time)
         VALUES ('points', 'order-d0', 'due-0', 0, now() - interval '1 minute'),
                ('points', 'order-d1', 'due-1', 0, now() - interval '1 minute')`,
      );
      const cwd = cwdWith(
        `db: ${primaryDsn}\nreadDb: ${standbyDsn}\nhandlers:\n  default: { type: mark-only }\n`,
      );
      const run = await runJson<{ claimed: number; succeeded: number }>(['redrive', '--biz-type', 'points'], {
        cwd,
      });
      expect(run.code, run.stderr).toBe(0);
      // The two due tasks exist on the primary only (replay is paused): claimed and settled there.
      expect(run.json).toMatchObject({ claimed: 2, succeeded: 2 });
      const done = await onPrimary.query<Record<string, unknown>>(
        `SELECT event_id FROM async_task WHERE biz_type = 'points' AND status = 2`,
      );
      expect(done.rows).toHaveLength(2);
      expect(await hasEvent(onStandby, 'due-0')).toBe(false);
    });

    it('once replay resumes, the row shows on the replica and scan reads it there', async () => {
      await onStandby.query<Record<string, unknown>>('SELECT pg_wal_replay_resume()');
      await until(async () => hasEvent(onStandby, 'primary-only'), 'the standby to replay the new row');
      await until(
        async () =>
          (
            await onStandby.query<Record<string, unknown>>(
              'SELECT pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() AS caught',
            )
          ).rows[0]?.caught === true,
        'the standby to catch up',
      );
      const scan = await runJson<ScanJson>(['scan', '--db', primaryDsn, '--read-db', standbyDsn]);
      expect(scan.json.summary.total).toBe(11);
      expect(scan.json.readReplicaLagSeconds).toBe(0);
      // The writes of compensate (dead-0 compensated) reached the replica by replication only.
      expect(scan.json.failed.map((t) => t.eventId).sort()).toEqual(['dead-1', 'dead-2', 'primary-only']);
      const settled = await onStandby.query<Record<string, unknown>>(
        `SELECT count(*)::int AS n FROM async_task WHERE biz_type = 'points' AND status = 2`,
      );
      expect(settled.rows[0]?.n).toBe(2);
    });
  });

  describe('with the primary gone', () => {
    beforeAll(async () => {
      await onPrimary.end();
      primary.crash();
      await until(
        async () =>
          (
            await onStandby.query<Record<string, unknown>>(
              `SELECT count(*)::int AS n FROM pg_stat_wal_receiver WHERE status = 'streaming'`,
            )
          ).rows[0]?.n === 0,
        'the WAL receiver to stop streaming',
      );
    });

    it('scan from the replica says its lag is unknown, and doctor fails the replica check', async () => {
      const scan = await runJson<ScanJson>(['scan', '--db', standbyDsn, '--read-db', standbyDsn]);
      expect(scan.code, scan.stderr).toBe(0);
      expect(scan.json.readReplicaLagSeconds).toBeNull();
      expect(scan.stderr).toMatch(/lag is unknown: the WAL receiver is not streaming/);
      const doctor = await runJson<DoctorJson>(['doctor', '--db', standbyDsn, '--read-db', standbyDsn]);
      const check = doctor.json.checks.find((c) => c.name === 'read replica');
      expect(check?.status).toBe('fail');
      expect(check?.message).toMatch(/lag unknown — the WAL receiver is not streaming/);
      expect(doctor.json.readReplica?.lagSeconds).toBeNull();
    });
  });
});
