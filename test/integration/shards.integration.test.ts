import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli, runJson } from '../support/cli.js';
import {
  dropShards,
  dueEventIds,
  groundTruth,
  latestFailures,
  machineMariadb,
  machinePostgres,
  openShardDb,
  seedShards,
  shardLayout,
  shardsConfigYaml,
  startMariadbServers,
  stopMariadbServers,
  type MariadbServer,
  type ShardServer,
  type Truth,
} from '../support/mariadb-servers.js';

// A sharded source as production has it: the classic task table split into 12 tables over three
// MariaDB servers (the machine's and two throw-away ones), read and redriven as one.
const prefix = `tr_sh_${randomBytes(3).toString('hex')}_`;
const layout = shardLayout({
  servers: 3,
  tablesPerServer: 4,
  databasePrefix: prefix,
  rowsPerShard: 150,
  rowsStep: 17,
});
let started: MariadbServer[] = [];
let servers: ShardServer[] = [];
let dir = '';
let config = '';

interface ScanJson {
  summary: {
    total: number;
    byStatus: Record<string, number>;
    due: number;
    stuck: number;
    oldestDueSeconds: number;
  };
  byBizType: { bizType: string; total: number }[];
  due: { shard: string; id: number; nextRetryAt: string }[];
  shards: { name: string; ok: boolean }[];
  missingShards?: string[];
}

function expectSums(json: ScanJson, truth: Truth): void {
  expect(json.summary.total).toBe(truth.total);
  for (const [status, n] of Object.entries(truth.byStatus)) expect(json.summary.byStatus[status]).toBe(n);
  expect(json.summary.due).toBe(truth.due);
  expect(json.summary.stuck).toBe(truth.stuck);
  // The oldest due is read a moment after the truth: the same instant, seconds later.
  if (truth.oldestDueSeconds === null) expect(json.summary.oldestDueSeconds).toBeNull();
  else {
    expect(json.summary.oldestDueSeconds).toBeGreaterThanOrEqual(truth.oldestDueSeconds);
    expect(json.summary.oldestDueSeconds).toBeLessThanOrEqual(truth.oldestDueSeconds + 5);
  }
  for (const [biz, n] of Object.entries(truth.byBizType))
    expect(json.byBizType.find((b) => b.bizType === biz)?.total).toBe(n);
}

beforeAll(async () => {
  started = await startMariadbServers(2);
  servers = [machineMariadb(), ...started];
  await seedShards(servers, layout);
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-shards-'));
  config = join(dir, 'taskrecon.config.yaml');
  writeFileSync(config, shardsConfigYaml(servers, layout));
}, 90_000);

afterAll(async () => {
  await dropShards([servers[0] as ShardServer], {
    shards: layout.shards.filter((s) => s.server === 0),
  }).catch(() => undefined);
  await stopMariadbServers(started);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a source of 12 shards on 3 MariaDB servers', () => {
  it('scan equals the SQL sums of every shard, each listed row naming its shard', async () => {
    const truth = await groundTruth(servers, layout);
    const { code, json } = await runJson<ScanJson>(['scan', '--config', config, '--limit', '50'], {
      cwd: dir,
    });
    expect(code).toBe(0);
    expectSums(json, truth);
    expect(json.shards).toHaveLength(12);
    expect(json.due).toHaveLength(50);
    // Merged in list order: next retry time, ascending, over all shards.
    const times = json.due.map((t) => t.nextRetryAt);
    expect([...times].sort()).toEqual(times);
    expect(new Set(json.due.map((t) => t.shard)).size).toBeGreaterThan(1);
  });

  it('streams every due row of every shard once, in order, each line naming its shard', async () => {
    const due = await dueEventIds(servers, layout);
    const { code, stdout } = await runCli(
      ['scan', '--config', config, '--status', 'pending', '--format', 'ndjson', '--limit', '0'],
      { cwd: dir },
    );
    expect(code).toBe(0);
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { shard: string; eventId: string; nextRetryAt: string });
    const expected = [...due].flatMap(([shard, ids]) => ids.map((id) => `${shard}|${id}`)).sort();
    expect(lines.map((l) => `${l.shard}|${l.eventId}`).sort()).toEqual(expected);
    const times = lines.map((l) => l.nextRetryAt);
    expect([...times].sort()).toEqual(times);
  });

  it('report and doctor agree with the sums; a shard row is shown by SHARD:ID', async () => {
    const truth = await groundTruth(servers, layout);
    const report = await runJson<{
      metrics: Record<string, number>;
      shards: { name: string; ok: boolean; due: number }[];
      byBizType: { bizType: string; sample: { id: string; failedAt: string } | null }[];
    }>(['report', '--config', config, '--window', '25h'], { cwd: dir });
    expect(report.json.metrics).toMatchObject({
      created: truth.total,
      succeeded: truth.byStatus.success,
      due: truth.due,
      stuck: truth.stuck,
      failedOpen: truth.byStatus.failed,
    });
    // The p95 from the merged histogram: never below the exact one, within 1 % (+1 s) above it.
    const p95 = truth.latencyP95Seconds as number;
    expect(report.json.metrics.latencyP95Seconds).toBeGreaterThanOrEqual(p95);
    expect(report.json.metrics.latencyP95Seconds).toBeLessThanOrEqual(Math.exp(0.01) * (p95 + 1));
    for (const s of truth.shards)
      expect(report.json.shards.find((x) => x.name === s.name)).toMatchObject({ ok: true, due: s.due });
    // Each failing biz type's sample is the latest failure of all shards (SHARD:ID).
    const latest = await latestFailures(servers, layout);
    const failing = report.json.byBizType.filter((b) => b.sample);
    expect(failing.length).toBeGreaterThan(0);
    for (const b of failing) {
      const rows = latest.filter((l) => l.bizType === b.bizType);
      const newest = Math.max(...rows.map((l) => l.failedAtEpoch));
      const sample = b.sample as { id: string; failedAt: string };
      expect(Date.parse(sample.failedAt) / 1000).toBe(newest);
      expect(rows.filter((l) => l.failedAtEpoch === newest).map((l) => `${l.shard}:${l.id}`)).toContain(
        sample.id,
      );
    }
    const prom = await runCli(['report', '--config', config, '--format', 'prometheus'], { cwd: dir });
    expect(prom.stdout.match(/^taskrecon_up\{source="tasks",shard="[^"]+"\} 1$/gm)).toHaveLength(12);

    const doctor = await runJson<{ checks: { name: string; status: string }[] }>(
      ['doctor', '--config', config],
      { cwd: dir },
    );
    expect(doctor.json.checks.find((c) => c.name === 'shard schemas')?.status).toBe('ok');
    expect(doctor.json.checks.filter((c) => c.name.endsWith(': table'))).toHaveLength(12);

    const one = layout.shards[7];
    const show = await runJson<{ task: { shard: string; id: number } }>(
      ['show', `${one?.name}:1`, '--config', config],
      { cwd: dir },
    );
    expect(show.json.task).toMatchObject({ shard: one?.name, id: 1 });
    const wrong = await runJson<{ error: { message: string } }>(['show', '1', '--config', config], {
      cwd: dir,
    });
    expect(wrong.code).toBe(3);
    expect(wrong.json.error.message).toMatch(/names no shard/);
  });

  it('two redrive processes deliver each due and stuck task exactly once across all shards', async () => {
    const truth = await groundTruth(servers, layout);
    const seen = new Map<string, number>();
    const server: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const { eventId } = JSON.parse(body) as { eventId: string };
        seen.set(eventId, (seen.get(eventId) ?? 0) + 1);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const redriveConfig = join(dir, 'redrive.yaml');
    writeFileSync(
      redriveConfig,
      `${shardsConfigYaml(servers, layout)}handlers:\n  default: { type: http, url: 'http://127.0.0.1:${port}/run', timeout: 5s }\n`,
    );
    const run = () =>
      new Promise<number>((resolve) => {
        const child = spawn(
          process.execPath,
          [BIN, 'redrive', '--config', redriveConfig, '--batch', '20', '--json'],
          {
            cwd: dir,
            env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
            stdio: 'ignore',
          },
        );
        child.on('exit', (code) => resolve(code ?? -1));
      });
    try {
      expect(await Promise.all([run(), run()])).toEqual([0, 0]);
    } finally {
      server.close();
    }
    expect(seen.size).toBe(truth.due + truth.stuck);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    const after = await groundTruth(servers, layout);
    expect(after.due).toBe(0);
    expect(after.stuck).toBe(0);
    expect(after.byStatus.success).toBe(truth.byStatus.success + truth.due + truth.stuck);
  }, 120_000);

  it('refuses shards whose schemas differ, naming the column and the shard; doctor reports it', async () => {
    const shard = layout.shards[5];
    const conn = await (servers[shard?.server as number] as MariadbServer).connect(shard?.database);
    try {
      await conn.query(`ALTER TABLE ${shard?.table} ADD COLUMN tenant INT NULL`);
      const scan = await runJson<{ error: { message: string } }>(['scan', '--config', config], { cwd: dir });
      expect(scan.code).toBe(3);
      expect(scan.json.error.message).toContain(`column tenant`);
      expect(scan.json.error.message).toContain(shard?.name);
      const doctor = await runJson<{ status: string; checks: { name: string; status: string }[] }>(
        ['doctor', '--config', config],
        { cwd: dir },
      );
      expect(doctor.code).toBe(1);
      expect(doctor.json.checks.find((c) => c.name === 'shard schemas')?.status).toBe('fail');
    } finally {
      await conn.query(`ALTER TABLE ${shard?.table} DROP COLUMN tenant`);
      await conn.end();
    }
  });

  it('bad shard lists: an empty range and a duplicate shard exit 3 naming them', async () => {
    const bad = (shards: string) => {
      const file = join(dir, `bad-${randomBytes(3).toString('hex')}.yaml`);
      writeFileSync(file, `sources:\n  tasks:\n    profile: async-task\n    shards:\n${shards}`);
      return runJson<{ error: { message: string } }>(['scan', '--config', file], { cwd: dir });
    };
    const dsn = servers[0]?.dsn(`${prefix}0`);
    const empty = await bad(`      - { db: '${dsn}', table: 'async_task_{3..0}' }\n`);
    expect(empty.code).toBe(3);
    expect(empty.json.error.message).toMatch(/range \{3\.\.0\} .* is empty/);
    const twice = await bad(
      `      - { db: '${dsn}', table: 'async_task_{0..2}' }\n      - { db: '${dsn}', table: async_task_1 }\n`,
    );
    expect(twice.code).toBe(3);
    expect(twice.json.error.message).toMatch(/async_task_1' is listed twice/);
  });

  it('a stopped server: exit 3 naming its shards; --allow-partial names them and sums the rest exactly', async () => {
    const down = started[1] as MariadbServer;
    await down.stop();
    try {
      const downShards = layout.shards.filter((s) => s.server === 2).map((s) => s.name);
      const refused = await runJson<{ error: { message: string } }>(['scan', '--config', config], {
        cwd: dir,
      });
      expect(refused.code).toBe(3);
      for (const name of downShards) expect(refused.json.error.message).toContain(name);
      const live = { shards: layout.shards.filter((s) => s.server !== 2) };
      const truth = await groundTruth(servers, live);
      const partial = await runJson<ScanJson>(['scan', '--config', config, '--allow-partial'], { cwd: dir });
      expect(partial.code).toBe(0);
      expect(partial.json.missingShards?.sort()).toEqual([...downShards].sort());
      expectSums(partial.json, truth);
      const report = await runCli(
        ['report', '--config', config, '--allow-partial', '--format', 'prometheus'],
        { cwd: dir },
      );
      expect(report.stdout.match(/^taskrecon_up\{source="tasks",shard="[^"]+"\} 0$/gm)).toHaveLength(4);
    } finally {
      await down.restart();
    }
  }, 90_000);
});

describe('a PostgreSQL shard beside MariaDB shards', () => {
  const mixed = shardLayout({
    servers: 2,
    tablesPerServer: 2,
    databasePrefix: `${prefix}mx_`,
    rowsPerShard: 120,
    rowsStep: 9,
  });
  let mixedServers: ShardServer[] = [];
  let file = '';
  beforeAll(async () => {
    mixedServers = [started[0] as MariadbServer, machinePostgres()];
    await seedShards(mixedServers, mixed);
    file = join(dir, 'mixed.yaml');
    writeFileSync(file, shardsConfigYaml(mixedServers, mixed));
  }, 60_000);
  afterAll(async () => {
    await dropShards([machinePostgres()], { shards: mixed.shards.filter((s) => s.server === 1) }).catch(
      () => undefined,
    );
  });

  it('reads the same: scan and report equal the sums of both engines', async () => {
    const truth = await groundTruth(mixedServers, mixed);
    const scan = await runJson<ScanJson>(['scan', '--config', file], { cwd: dir });
    expect(scan.code).toBe(0);
    expectSums(scan.json, truth);
    const report = await runJson<{ metrics: Record<string, number> }>(
      ['report', '--config', file, '--window', '25h'],
      {
        cwd: dir,
      },
    );
    expect(report.json.metrics).toMatchObject({ created: truth.total, due: truth.due, stuck: truth.stuck });
  });

  it('a figure one shard holds back (a big table no index serves for it) is held back for the source, never summed over some shards', async () => {
    const pgShard = mixed.shards.find((s) => s.server === 1) as (typeof mixed.shards)[number];
    const db = await openShardDb(machinePostgres(), pgShard.database);
    try {
      // The planner's estimate is what the guard reads: this shard now counts as a 250k-row table
      // with no index on created_at (the MariaDB shards stay small).
      await db.query(`UPDATE pg_class SET reltuples = 250000 WHERE relname = '${pgShard.table}'`);
      const truth = await groundTruth(mixedServers, mixed);
      type Report = { metrics: Record<string, number | null>; skipped?: string[] };
      const held = await runJson<Report>(['report', '--config', file, '--window', '25h'], { cwd: dir });
      expect(held.json.skipped).toContain('window');
      expect(held.json.metrics).toMatchObject({ created: null, succeeded: null, latencyP95Seconds: null });
      // Due is served by an index on every shard: the sum of all of them.
      expect(held.json.metrics.due).toBe(truth.due);
      for (const k of ['stuck', 'failedOpen'] as const)
        expect([null, k === 'stuck' ? truth.stuck : truth.byStatus.failed]).toContain(held.json.metrics[k]);

      const scan = await runJson<ScanJson & { skipped?: string[] }>(['scan', '--config', file], { cwd: dir });
      expect(scan.json.summary.total).toBe(truth.total);
      expect(scan.json.skipped).toContain('byBizType');
      expect(scan.json.byBizType).toEqual([]);
      expect([null, truth.stuck]).toContain(scan.json.summary.stuck);

      const full = await runJson<Report>(['report', '--config', file, '--window', '25h', '--full-scan'], {
        cwd: dir,
      });
      expect(full.json.metrics).toMatchObject({ created: truth.total, due: truth.due, stuck: truth.stuck });
    } finally {
      await db.query(`ANALYZE ${pgShard.table}`);
      await db.end();
    }
  });
});
