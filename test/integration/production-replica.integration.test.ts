import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { startReplicaPair, type ReplicaPair } from '../support/replica.js';
import { seedDueTasks } from '../fixtures/redrive/seed.js';
import type mysql from 'mysql2/promise';

interface ScanJson {
  summary: { total: number; byStatus: Record<string, number> };
  failed: Array<{ id: number; eventId: string }>;
  readReplicaLagSeconds?: number | null;
}
interface DoctorJson {
  checks: Array<{ name: string; status: string; message: string }>;
  readReplica?: { lagSeconds: number | null; running: boolean };
}

const DB = 'shop';
let pair: ReplicaPair;
let primary: string;
let replica: string;

async function one(
  sql: mysql.Connection,
  query: string,
  params: unknown[] = [],
): Promise<Record<string, unknown>[]> {
  const [rows] = await sql.query(query, params);
  return rows as Record<string, unknown>[];
}

beforeAll(async () => {
  pair = await startReplicaPair();
  primary = pair.primaryDsn(DB);
  replica = pair.replicaDsn(DB);
  await pair.primary.query(`CREATE DATABASE ${DB}`);
  const init = await runCli(['init', '--db', primary]);
  expect(init.code, init.stderr).toBe(0);
  await pair.primary.query(`USE ${DB}`);
  await seedDueTasks(pair.primary, 3, { prefix: 'dead', status: 3 });
  await seedDueTasks(pair.primary, 5, { prefix: 'done', status: 2 });
  await pair.caughtUp();
  await pair.replica.query(`USE ${DB}`);
}, 90_000);

afterAll(async () => {
  await pair?.stop();
}, 60_000);

describe('a read replica (--read-db)', () => {
  it('doctor reports the lag of a replicating replica, and scan says its figures come from it', async () => {
    const doctor = await runJson<DoctorJson>(['doctor', '--db', primary, '--read-db', replica]);
    const check = doctor.json.checks.find((c) => c.name === 'read replica');
    expect(check?.status, JSON.stringify(check)).toBe('ok');
    expect(check?.message).toMatch(/is 0s behind the primary/);
    expect(doctor.json.readReplica?.lagSeconds).toBe(0);
    const scan = await runJson<ScanJson>(['scan', '--db', primary, '--read-db', replica]);
    expect(scan.code, scan.stderr).toBe(0);
    expect(scan.json.readReplicaLagSeconds).toBe(0);
    expect(scan.stderr).toMatch(/figures read from the replica/);
    const report = await runJson<{ readReplicaLagSeconds?: number | null }>([
      'report',
      '--db',
      primary,
      '--read-db',
      replica,
    ]);
    // Three failed of eight created in the window: a breach, so a non-zero exit; the figures are what count here.
    expect([0, 1, 2], report.stderr).toContain(report.code);
    expect(report.json.readReplicaLagSeconds).toBe(0);
  });

  describe('with replication stopped', () => {
    beforeAll(async () => {
      await pair.replica.query('STOP SLAVE');
      // A row only the replica has: whoever shows it read the replica.
      await pair.replica.query(
        "INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at) VALUES ('coupon', 'r-1', 'replica-only', '{}', 3, NOW(), NOW(), NOW())",
      );
    });

    afterAll(async () => {
      await pair.replica.query("DELETE FROM async_task WHERE event_id = 'replica-only'");
      await pair.replica.query('START SLAVE');
    });

    it('scan reads from the replica (a row only it has), says its lag is unknown; without --read-db it reads the primary', async () => {
      const scan = await runJson<ScanJson>(['scan', '--db', primary, '--read-db', replica]);
      expect(scan.code, scan.stderr).toBe(0);
      expect(scan.json.failed.map((t) => t.eventId)).toContain('replica-only');
      expect(scan.json.summary.total).toBe(9);
      expect(scan.json.readReplicaLagSeconds).toBeNull();
      expect(scan.stderr).toMatch(/lag is unknown: replication is stopped/);
      const fromPrimary = await runJson<ScanJson>(['scan', '--db', primary]);
      expect(fromPrimary.json.failed.map((t) => t.eventId)).not.toContain('replica-only');
      expect(fromPrimary.json.summary.total).toBe(8);
      expect(fromPrimary.json.readReplicaLagSeconds).toBeUndefined();
    });

    it('takes the replica from config readDb too', async () => {
      const { mkdtempSync, writeFileSync } = await import('node:fs');
      const { tmpdir } = await import('node:os');
      const { join } = await import('node:path');
      const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-replica-config-'));
      writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${primary}\nreadDb: ${replica}\n`);
      const scan = await runJson<ScanJson>(['scan'], { cwd });
      expect(scan.json.failed.map((t) => t.eventId)).toContain('replica-only');
    });

    it('compensate writes to the primary, never the replica', async () => {
      const [target] = await one(pair.primary, "SELECT id FROM async_task WHERE event_id = 'dead-0'");
      const run = await runJson<{ applied: number }>([
        'compensate',
        String(target?.id),
        '--db',
        primary,
        '--read-db',
        replica,
        '--action',
        'mark-compensated',
        '--reason',
        'replica test',
        '--yes',
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.json.applied).toBe(1);
      const onPrimary = await one(pair.primary, "SELECT status FROM async_task WHERE event_id = 'dead-0'");
      expect(Number(onPrimary[0]?.status)).toBe(4);
      const audit = await one(pair.primary, 'SELECT COUNT(*) AS n FROM taskrecon_audit');
      expect(Number(audit[0]?.n)).toBe(1);
      // Replication is stopped: the replica still has the old row, so the write cannot have gone there.
      const onReplica = await one(pair.replica, "SELECT status FROM async_task WHERE event_id = 'dead-0'");
      expect(Number(onReplica[0]?.status)).toBe(3);
    });

    it('doctor fails the replica check, saying replication is stopped and the lag unknown', async () => {
      const doctor = await runJson<DoctorJson>(['doctor', '--db', primary, '--read-db', replica]);
      expect(doctor.code).toBe(1);
      const check = doctor.json.checks.find((c) => c.name === 'read replica');
      expect(check?.status).toBe('fail');
      expect(check?.message).toMatch(/lag unknown — replication is stopped/);
      expect(doctor.json.readReplica?.lagSeconds).toBeNull();
    });
  });

  it('doctor fails a --read-db that is no replica at all', async () => {
    const doctor = await runJson<DoctorJson>(['doctor', '--db', primary, '--read-db', primary]);
    const check = doctor.json.checks.find((c) => c.name === 'read replica');
    expect(check?.status).toBe('fail');
    expect(check?.message).toMatch(/not a replica/);
  });
});
