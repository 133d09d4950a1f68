import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { driveCompensate } from '../support/compensate-pty.js';
import {
  dropShards,
  machineMariadb,
  openShardDb,
  seedShards,
  shardLayout,
  shardsConfigYaml,
  startMariadbServers,
  stopMariadbServers,
  type MariadbServer,
  type ShardServer,
  type ShardSpec,
} from '../support/mariadb-servers.js';

// Writes on a sharded source: compensate, sweep and audit over 4 shards on 2 MariaDB servers
// (the machine's and a throw-away one), each shard's changes audited in its own database.
const prefix = `tr_shw_${randomBytes(3).toString('hex')}_`;
const layout = shardLayout({
  servers: 2,
  tablesPerServer: 2,
  databasePrefix: prefix,
  rowsPerShard: 80,
  rowsStep: 11,
});
let started: MariadbServer[] = [];
let servers: ShardServer[] = [];
let dir = '';
let config = '';

const FAILED = 3;

/** Runs `sql` on the database of a shard. */
async function onShard<T = Record<string, unknown>>(shard: ShardSpec, sql: string): Promise<T[]> {
  const db = await openShardDb(servers[shard.server] as ShardServer, shard.database);
  try {
    return await db.query<T>(sql);
  } finally {
    await db.end();
  }
}

/** Every row of every shard, as text: what a write changed shows here. */
async function checksums(): Promise<string[]> {
  return Promise.all(
    layout.shards.map(async (s) => {
      const rows = await onShard(s, `CHECKSUM TABLE \`${s.table}\` EXTENDED`);
      const audit = await onShard<{ n: unknown }>(
        s,
        `SELECT COUNT(*) AS n FROM taskrecon_audit WHERE task_table = '${s.table}'`,
      );
      return `${s.name}:${String(rows[0]?.Checksum)}:${String(audit[0]?.n)}`;
    }),
  );
}

const failedIds = async (s: ShardSpec) =>
  (
    await onShard<{ id: unknown }>(s, `SELECT id FROM \`${s.table}\` WHERE status = ${FAILED} ORDER BY id`)
  ).map((r) => Number(r.id));

interface AuditRow {
  task_table: string;
  task_id: string;
  action: string;
  source: string;
  run_id: string;
}

const auditRows = (s: ShardSpec, where = '1 = 1') =>
  onShard<AuditRow>(
    s,
    `SELECT task_table, task_id, action, source, run_id FROM taskrecon_audit WHERE task_table = '${s.table}' AND ${where}`,
  );

interface CompensateJson {
  matched: number;
  applied: number;
  dryRun: boolean;
  runId: string;
  results: { shard: string; id: number; outcome: string }[];
  shards: { shard: string; matched: number; applied: number }[];
}

beforeAll(async () => {
  started = await startMariadbServers(1);
  servers = [machineMariadb(), ...started];
  await seedShards(servers, layout);
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-shard-writes-'));
  config = join(dir, 'taskrecon.config.yaml');
  writeFileSync(
    config,
    `${shardsConfigYaml(servers, layout)}sweeps:\n  - { name: sms, match: { bizType: sms }, action: retry }\n`,
  );
  const databases = new Map(layout.shards.map((s) => [s.database, s]));
  for (const s of databases.values()) {
    const dsn = (servers[s.server] as ShardServer).dsn(s.database);
    const init = await runCli(['init', '--audit-only', '--db', dsn], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
  }
}, 90_000);

afterAll(async () => {
  await dropShards([servers[0] as ShardServer], {
    shards: layout.shards.filter((s) => s.server === 0),
  }).catch(() => undefined);
  await stopMariadbServers(started);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const cli = (args: string[]) => runJson<CompensateJson>([...args, '--config', config], { cwd: dir });

describe('compensate on a sharded source', () => {
  it('--dry-run plans every shard and writes nothing', async () => {
    const before = await checksums();
    const { code, json } = await cli(['compensate', '--action', 'retry', '--status', 'failed', '--dry-run']);
    expect(code).toBe(0);
    expect(json.dryRun).toBe(true);
    let failed = 0;
    for (const s of layout.shards) {
      const ids = await failedIds(s);
      failed += ids.length;
      expect(json.shards.find((p) => p.shard === s.name)?.matched).toBe(ids.length);
    }
    expect(failed).toBeGreaterThan(0);
    expect(json.matched).toBe(failed);
    expect(json.results.every((r) => layout.shards.some((s) => s.name === r.shard))).toBe(true);
    expect(await checksums()).toEqual(before);
  });

  it('on a terminal it shows the plan per shard and asks once: no writes nothing, yes writes', async () => {
    const args = [
      '--config',
      config,
      '--action',
      'mark-compensated',
      '--status',
      'failed',
      '--biz-type',
      'refund',
    ];
    const before = await checksums();
    const no = await driveCompensate(dir, args, [
      { expect: 'tasks on 4 shards', send: '' },
      { expect: '\\? Apply', send: 'n\r' },
    ]);
    expect(no.failedStep, no.screen).toBeNull();
    for (const s of layout.shards) expect(no.screen).toContain(s.name);
    expect(no.screen).toContain('Nothing changed.');
    expect(await checksums()).toEqual(before);
    const refunds = await Promise.all(
      layout.shards.map(async (s) =>
        Number(
          (
            await onShard<{ n: unknown }>(
              s,
              `SELECT COUNT(*) AS n FROM \`${s.table}\` WHERE status = ${FAILED} AND biz_type = 'refund'`,
            )
          )[0]?.n,
        ),
      ),
    );
    const yes = await driveCompensate(dir, args, [{ expect: '\\? Apply', send: 'y\r' }]);
    expect(yes.code, yes.screen).toBe(0);
    for (const [i, s] of layout.shards.entries()) {
      expect((await auditRows(s, `action = 'mark-compensated'`)).length).toBe(refunds[i]);
    }
    expect(refunds.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  }, 60_000);

  it('an unknown shard or an unknown id in any shard stops the run with nothing written', async () => {
    const before = await checksums();
    const first = layout.shards[0] as ShardSpec;
    const last = layout.shards[3] as ShardSpec;
    const id = (await failedIds(first))[0] as number;
    const unknown = await cli([
      'compensate',
      `${first.name}:${id}`,
      'nosuch.async_task_9:1',
      '--action',
      'retry',
      '--yes',
    ]);
    expect(unknown.code).toBe(3);
    expect(JSON.stringify(unknown.json)).toMatch(/unknown shard 'nosuch.async_task_9'/);
    const missing = await cli([
      'compensate',
      `${first.name}:${id}`,
      `${last.name}:99999999`,
      '--action',
      'retry',
      '--yes',
    ]);
    expect(missing.code).toBe(3);
    expect(JSON.stringify(missing.json)).toMatch(/unknown task id 99999999/);
    expect(await checksums()).toEqual(before);
  });

  it('--id SHARD:ID changes that one row of that shard, audited there', async () => {
    const shard = layout.shards[2] as ShardSpec;
    const id = (await failedIds(shard))[0] as number;
    const before = await checksums();
    const { code, json } = await cli([
      'compensate',
      `${shard.name}:${id}`,
      '--action',
      'retry',
      '--reason',
      'one',
      '--yes',
    ]);
    expect(code).toBe(0);
    expect(json.applied).toBe(1);
    expect(json.results).toEqual([expect.objectContaining({ shard: shard.name, id, outcome: 'applied' })]);
    const after = await checksums();
    layout.shards.forEach((s, i) => {
      if (s !== shard) expect(after[i]).toBe(before[i]);
      else expect(after[i]).not.toBe(before[i]);
    });
    const [row] = await onShard<{ status: number }>(
      shard,
      `SELECT status FROM \`${shard.table}\` WHERE id = ${id}`,
    );
    expect(Number(row?.status)).toBe(0);
    expect(await auditRows(shard, `run_id = '${json.runId}'`)).toEqual([
      expect.objectContaining({ task_id: String(id), action: 'retry', source: 'tasks' }),
    ]);
  });

  it('a retry of failed tasks changes exactly the failed rows of every shard, one audit row each in its database', async () => {
    const failed = new Map<string, number[]>();
    for (const s of layout.shards) failed.set(s.name, await failedIds(s));
    const total = [...failed.values()].reduce((n, ids) => n + ids.length, 0);
    const { code, json } = await cli([
      'compensate',
      '--action',
      'retry',
      '--status',
      'failed',
      '--reason',
      'partner back',
      '--yes',
    ]);
    expect(code).toBe(0);
    expect(json.applied).toBe(total);
    for (const s of layout.shards) {
      const ids = failed.get(s.name) ?? [];
      expect(json.shards.find((p) => p.shard === s.name)?.applied).toBe(ids.length);
      expect(await failedIds(s)).toEqual([]);
      const back = await onShard<{ id: unknown }>(
        s,
        `SELECT id FROM \`${s.table}\` WHERE status = 0 AND id IN (${ids.join(',') || 0})`,
      );
      expect(back.length).toBe(ids.length);
      const audit = await auditRows(s, `run_id = '${json.runId}'`);
      expect(audit.map((a) => Number(a.task_id)).sort((a, b) => a - b)).toEqual(ids);
    }
  });

  it('without --yes off a terminal it refuses, writing nothing', async () => {
    const before = await checksums();
    const { code } = await cli(['compensate', '--action', 'mark-failed', '--status', 'pending']);
    expect(code).toBe(3);
    expect(await checksums()).toEqual(before);
  });
});

interface SweepJson {
  retried: number;
  lostRace: number;
  shards?: string[];
  results: { shard?: string; id: number; outcome: string }[];
}

describe('sweep on a sharded source', () => {
  const planted = new Map<string, number[]>();

  it('retries the matching failed tasks of every shard once, even with two sweeps at once', async () => {
    // Fresh failures on every shard: sms ones the rule retries, payment ones no rule matches.
    for (const s of layout.shards) {
      const t = `\`${s.table}\``;
      await onShard(
        s,
        `UPDATE ${t} SET status = ${FAILED}, updated_at = NOW() WHERE status = 0 AND biz_type = 'sms' ORDER BY id LIMIT 4`,
      );
      await onShard(
        s,
        `UPDATE ${t} SET status = ${FAILED}, updated_at = NOW() WHERE status = 0 AND biz_type = 'payment' ORDER BY id LIMIT 2`,
      );
      planted.set(
        s.name,
        (
          await onShard<{ id: unknown }>(
            s,
            `SELECT id FROM ${t} WHERE status = ${FAILED} AND biz_type = 'sms' ORDER BY id`,
          )
        ).map((r) => Number(r.id)),
      );
      expect(planted.get(s.name)).toHaveLength(4);
    }
    const sweep = () => runJson<SweepJson>(['sweep', '--config', config, '--since', '1h'], { cwd: dir });
    const [a, b] = await Promise.all([sweep(), sweep()]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.json.shards).toEqual(layout.shards.map((s) => s.name));
    expect(a.json.retried + b.json.retried).toBe(16);
    for (const s of layout.shards) {
      const ids = planted.get(s.name) ?? [];
      const back = await onShard<{ id: unknown }>(
        s,
        `SELECT id FROM \`${s.table}\` WHERE status = 0 AND id IN (${ids.join(',')})`,
      );
      expect(back).toHaveLength(4);
      const audit = await auditRows(s, `action = 'sweep-retry'`);
      expect(audit.map((r) => Number(r.task_id)).sort((x, y) => x - y)).toEqual(ids);
      // The payment failures match no rule: left failed.
      const left = await onShard<{ n: unknown }>(
        s,
        `SELECT COUNT(*) AS n FROM \`${s.table}\` WHERE status = ${FAILED} AND biz_type = 'payment'`,
      );
      expect(Number(left[0]?.n)).toBe(2);
    }
    const retried = [...a.json.results, ...b.json.results].filter((r) => r.outcome === 'retried');
    expect(new Set(retried.map((r) => `${r.shard}:${r.id}`)).size).toBe(16);
    // A second sweep over the same window finds nothing new.
    const again = await sweep();
    expect(again.json.retried).toBe(0);
  }, 60_000);

  it('alerts a second failure on any shard once, even with two sweeps at once', async () => {
    let messages = 0;
    const hook: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        messages++;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    try {
      // The swept sms tasks fail again: each is a second failure (the rule allows one sweep). The
      // table keeps whole seconds: the new failure is stamped a second after the retry's audit.
      await new Promise((r) => setTimeout(r, 1_100));
      for (const s of layout.shards)
        await onShard(
          s,
          `UPDATE \`${s.table}\` SET status = ${FAILED}, updated_at = NOW() WHERE id IN (${(planted.get(s.name) ?? []).join(',')})`,
        );
      const sweep = () =>
        runJson<SweepJson & { secondFailures: number; alerted: number }>(
          ['sweep', '--config', config, '--since', '1h', '--notify', '--webhook', `generic=${url}`],
          { cwd: dir },
        );
      const [a, b] = await Promise.all([sweep(), sweep()]);
      expect([a.code, b.code]).toEqual([1, 1]);
      expect(a.json.secondFailures).toBe(16);
      expect(a.json.alerted + b.json.alerted).toBe(16);
      expect(messages).toBeGreaterThan(0);
      for (const s of layout.shards) {
        const alerts = await auditRows(s, `action = 'sweep-alert'`);
        expect(alerts.map((r) => Number(r.task_id)).sort((x, y) => x - y)).toEqual(planted.get(s.name));
      }
      const again = await sweep();
      expect(again.json.alerted).toBe(0);
    } finally {
      hook.close();
    }
  }, 60_000);

  it('report carries the sweep figures and the trend of every shard, added', async () => {
    const { code, json } = await runJson<{
      sweep?: { secondFailures: number; deferred: number };
      trend?: { bucketSeconds: number; points: { start: number; created: number; failed: number }[] };
    }>(['report', '--config', config, '--window', '1h', '--trend', '24h'], { cwd: dir });
    expect([0, 1, 2]).toContain(code);
    // The 16 second failures the sweeps above alerted, four on each shard.
    expect(json.sweep).toEqual({ secondFailures: 16, deferred: 0 });
    const trend = json.trend;
    expect(trend?.points).toHaveLength(24);
    const first = trend?.points[0]?.start ?? 0;
    const size = trend?.bucketSeconds ?? 3600;
    // The truth: every shard's rows created in the span, bucketed by the same arithmetic, added.
    const truth = new Map<number, { created: number; failed: number }>();
    for (const sh of layout.shards) {
      const rows = await onShard<{ b: unknown; n: unknown; f: unknown }>(
        sh,
        `SELECT UNIX_TIMESTAMP(created_at) - UNIX_TIMESTAMP(created_at) % ${size} AS b, COUNT(*) AS n,
           SUM(status = ${FAILED}) AS f FROM \`${sh.table}\` WHERE UNIX_TIMESTAMP(created_at) >= ${first} GROUP BY b`,
      );
      for (const r of rows) {
        const at = truth.get(Number(r.b)) ?? { created: 0, failed: 0 };
        truth.set(Number(r.b), { created: at.created + Number(r.n), failed: at.failed + Number(r.f) });
      }
    }
    const created = [...truth.values()].reduce((sum, t) => sum + t.created, 0);
    expect(created).toBeGreaterThan(0);
    for (const p of trend?.points ?? [])
      expect({ start: p.start, created: p.created, failed: p.failed }).toEqual({
        start: p.start,
        ...(truth.get(p.start) ?? { created: 0, failed: 0 }),
      });
  }, 60_000);
});

interface AuditJson {
  count: number;
  entries: { shard: string; table: string; taskId: string; action: string; at: string }[];
}

describe('audit on a sharded source', () => {
  it('lists the audit rows of every shard, each naming its shard, newest last', async () => {
    let total = 0;
    for (const s of layout.shards) total += (await auditRows(s)).length;
    const { code, json } = await runJson<AuditJson>(['audit', '--config', config, '--limit', '0'], {
      cwd: dir,
    });
    expect(code).toBe(0);
    expect(json.count).toBe(total);
    for (const s of layout.shards) {
      const mine = json.entries.filter((e) => e.shard === s.name);
      expect(mine.length).toBe((await auditRows(s)).length);
      expect(mine.every((e) => e.table === s.table)).toBe(true);
    }
    const times = json.entries.map((e) => e.at);
    expect([...times].sort()).toEqual(times);
    const few = await runJson<AuditJson>(['audit', '--config', config, '--limit', '5'], { cwd: dir });
    expect(few.json.entries).toEqual(json.entries.slice(-5));
  });
});

describe('a stopped server', () => {
  it('audit exits 3 naming its shards; --allow-partial names them and lists the rest; compensate writes nothing', async () => {
    const up = layout.shards.filter((s) => s.server === 0);
    const down = layout.shards.filter((s) => s.server === 1).map((s) => s.name);
    let expected = 0;
    for (const s of up) expected += (await auditRows(s)).length;
    await stopMariadbServers(started);
    started = [];
    const stopped = await runJson<{ error: { message: string } }>(['audit', '--config', config], {
      cwd: dir,
    });
    expect(stopped.code).toBe(3);
    for (const name of down) expect(stopped.json.error.message).toContain(name);
    const partial = await runJson<AuditJson & { missingShards: string[] }>(
      ['audit', '--config', config, '--limit', '0', '--allow-partial'],
      { cwd: dir },
    );
    expect(partial.code).toBe(0);
    expect(partial.json.missingShards).toEqual(down);
    expect(partial.json.count).toBe(expected);
    expect(new Set(partial.json.entries.map((e) => e.shard))).toEqual(new Set(up.map((s) => s.name)));
    const compensate = await cli(['compensate', '--action', 'mark-failed', '--status', 'pending', '--yes']);
    expect(compensate.code).toBe(3);
    for (const s of up) expect((await auditRows(s, `action = 'mark-failed'`)).length).toBe(0);
  }, 60_000);
});
