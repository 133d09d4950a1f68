import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import {
  dropShards,
  dueEventIds,
  groundTruth,
  machinePostgres,
  nearestRank,
  refusesConnections,
  seedShards,
  shardLayout,
  shardsConfigYaml,
  startMariadbServers,
  stopMariadbServers,
  type MariadbServer,
  type ShardLayout,
  type ShardSpec,
  type ShardTruth,
} from '../support/mariadb-servers.js';

// The harness the sharded-source tests stand on: two throw-away mariadbd processes, eight shards
// seeded with a different mix each, and the ground truth checked against direct queries.
const layout = shardLayout({ servers: 2, rowsPerShard: 120, rowsStep: 23 });
let servers: MariadbServer[] = [];

async function one<T>(server: MariadbServer, sql: string): Promise<T> {
  const conn = await server.connect();
  try {
    const [rows] = await conn.query(sql);
    return (rows as T[])[0] as T;
  } finally {
    await conn.end();
  }
}

beforeAll(async () => {
  const started = Date.now();
  servers = await startMariadbServers(2);
  expect(Date.now() - started).toBeLessThan(20_000);
  await seedShards(servers, layout);
});

afterAll(async () => {
  await stopMariadbServers(servers);
});

describe('throw-away MariaDB servers', () => {
  it('start on distinct loopback ports, each its own server', async () => {
    const [a, b] = servers as [MariadbServer, MariadbServer];
    expect(a.port).not.toBe(b.port);
    expect(a.pid).toBeGreaterThan(0);
    expect(await one<{ port: number }>(a, 'SELECT @@port AS port')).toEqual({ port: a.port });
    expect(await one<{ port: number }>(b, 'SELECT @@port AS port')).toEqual({ port: b.port });
    expect(a.dsn('shop_0')).toBe(`mysql://root@127.0.0.1:${a.port}/shop_0`);
  });

  it('hold each shard on its own server only, with its own row count', async () => {
    for (const shard of layout.shards) {
      const here = servers[shard.server] as MariadbServer;
      const other = servers[1 - shard.server] as MariadbServer;
      const row = await one<{ n: number }>(
        here,
        `SELECT COUNT(*) AS n FROM ${shard.database}.${shard.table}`,
      );
      expect(Number(row.n)).toBe(shard.rows);
      const absent = await one<{ n: number }>(
        other,
        `SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = '${shard.database}' AND TABLE_NAME = '${shard.table}'`,
      );
      expect(Number(absent.n)).toBe(0);
    }
    expect(new Set(layout.shards.map((s) => s.rows)).size).toBe(layout.shards.length);
  });

  it('ground truth equals direct queries on every shard and sums them', async () => {
    const truth = await groundTruth(servers, layout);
    expect(truth.shards.map((s) => s.name)).toEqual(layout.shards.map((s) => s.name));
    for (const [i, shard] of layout.shards.entries()) {
      const t = `${shard.database}.${shard.table}`;
      const direct = await one<Record<string, string | number | null>>(
        servers[shard.server] as MariadbServer,
        `SELECT COUNT(*) AS total, SUM(status = 0) AS pending, SUM(status = 1) AS processing, SUM(status = 2) AS success,
           SUM(status = 3) AS failed, SUM(status = 4) AS compensated,
           SUM(status = 0 AND next_retry_time <= NOW()) AS due,
           SUM(status = 1 AND TIMESTAMPDIFF(SECOND, updated_at, NOW()) >= 600) AS stuck,
           (SELECT UNIX_TIMESTAMP(MIN(next_retry_time)) FROM ${t} WHERE status = 0 AND next_retry_time <= NOW()) AS oldest
         FROM ${t}`,
      );
      const s = truth.shards[i];
      expect(s?.total).toBe(Number(direct.total));
      expect(s?.byStatus).toEqual({
        pending: Number(direct.pending),
        processing: Number(direct.processing),
        success: Number(direct.success),
        failed: Number(direct.failed),
        compensated: Number(direct.compensated),
      });
      expect(s?.due).toBe(Number(direct.due));
      expect(s?.stuck).toBe(Number(direct.stuck));
      expect(s?.oldestDueEpoch).toBe(Math.trunc(Number(direct.oldest)));
      // Every status, and both sides of the due and stuck lines, are planted on every shard.
      for (const n of Object.values(s?.byStatus ?? {})) expect(n).toBeGreaterThan(0);
      expect(s?.due).toBeLessThan(s?.byStatus.pending ?? 0);
      expect(s?.stuck).toBeLessThan(s?.byStatus.processing ?? 0);
      expect(s?.stuck).toBeGreaterThan(0);
    }
    const sum = (f: (s: (typeof truth.shards)[number]) => number) =>
      truth.shards.reduce((a, s) => a + f(s), 0);
    expect(truth.total).toBe(layout.shards.reduce((a, s) => a + s.rows, 0));
    expect(truth.due).toBe(sum((s) => s.due));
    expect(truth.stuck).toBe(sum((s) => s.stuck));
    expect(truth.byStatus.failed).toBe(sum((s) => s.byStatus.failed));
    expect(Object.values(truth.byBizType).reduce((a, n) => a + n, 0)).toBe(truth.total);
    // The oldest due is the last shard's (seeded 100 s further back per shard), not the first's.
    const last = truth.shards[truth.shards.length - 1];
    expect(truth.oldestDueEpoch).toBe(last?.oldestDueEpoch);
    expect(truth.oldestDueEpoch).toBeLessThan(truth.shards[0]?.oldestDueEpoch ?? 0);
    expect(truth.oldestDueSeconds).toBeGreaterThanOrEqual(700);
    // The per-shard counts differ, so a merge that counts one shard twice cannot pass.
    expect(new Set(truth.shards.map((s) => s.due)).size).toBeGreaterThan(1);
  });

  it('a row planted on one shard moves that shard and the sum by exactly one', async () => {
    const before = await groundTruth(servers, layout);
    const shard = layout.shards[5];
    const conn = await (servers[shard?.server ?? 0] as MariadbServer).connect(shard?.database);
    await conn.query(
      `INSERT INTO ${shard?.table} (biz_type, biz_id, event_id, status, next_retry_time) VALUES ('planted', 'p', 'planted-1', 0, NOW() - INTERVAL 1 DAY)`,
    );
    const after = await groundTruth(servers, layout);
    await conn.query(`DELETE FROM ${shard?.table} WHERE event_id = 'planted-1'`);
    await conn.end();
    expect(after.due - before.due).toBe(1);
    expect((after.shards[5]?.due ?? 0) - (before.shards[5]?.due ?? 0)).toBe(1);
    expect(after.shards[4]?.due).toBe(before.shards[4]?.due);
    expect(after.byBizType.planted).toBe(1);
    expect(after.oldestDueEpoch).toBeLessThan((before.oldestDueEpoch ?? 0) - 80_000);
  });

  it('a PostgreSQL shard holds the same rows as the MariaDB shard of the same index', async () => {
    const twin = layout.shards[5] as ShardSpec;
    const database = `tr_shard_pg_${randomBytes(3).toString('hex')}`;
    const pgLayout: ShardLayout = {
      shards: [{ ...twin, server: 0, database, name: `${database}.${twin.table}` }],
    };
    const pgServer = machinePostgres();
    await seedShards([pgServer], pgLayout);
    try {
      const [onPg, onMariadb] = [await groundTruth([pgServer], pgLayout), await groundTruth(servers, layout)];
      const pgShard = onPg.shards[0] as ShardTruth;
      const myShard = onMariadb.shards[5] as ShardTruth;
      for (const key of ['total', 'byStatus', 'due', 'stuck', 'byBizType', 'successLatency'] as const)
        expect(pgShard[key], key).toEqual(myShard[key]);
      const age = (s: ShardTruth) => s.nowEpoch - (s.oldestDueEpoch ?? 0);
      expect(Math.abs(age(pgShard) - age(myShard))).toBeLessThanOrEqual(3);
      expect(shardsConfigYaml([pgServer], pgLayout)).toContain(
        `db: "${pgServer.dsn(database)}", table: "${twin.table}"`,
      );
    } finally {
      await dropShards([pgServer], pgLayout);
    }
  });

  it('a different stuck threshold moves the stuck count', async () => {
    const strict = await groundTruth(servers, layout, { stuckAfterSeconds: 30 });
    const loose = await groundTruth(servers, layout, { stuckAfterSeconds: 7200 });
    const normal = await groundTruth(servers, layout);
    expect(strict.stuck).toBeGreaterThan(normal.stuck);
    expect(loose.stuck).toBeLessThan(normal.stuck);
  });

  it('the p95 is the nearest rank of the merged latencies', () => {
    expect(nearestRank({ 1: 94, 50: 5, 90: 1 }, 0.95)).toBe(50);
    expect(nearestRank({ 1: 95, 50: 5 }, 0.95)).toBe(1);
    expect(nearestRank({}, 0.95)).toBeNull();
  });

  it('writes a config with one range per database', () => {
    const yaml = shardsConfigYaml(servers, layout);
    const a = servers[0] as MariadbServer;
    const b = servers[1] as MariadbServer;
    expect(yaml).toBe(
      [
        'sources:',
        '  tasks:',
        '    profile: async-task',
        '    shards:',
        `      - { db: "mysql://root@127.0.0.1:${a.port}/shop_0", table: "async_task_{0..3}" }`,
        `      - { db: "mysql://root@127.0.0.1:${b.port}/shop_1", table: "async_task_{4..7}" }`,
        '',
      ].join('\n'),
    );
    const renamed: ShardLayout = {
      shards: layout.shards.map((s) => (s.index === 2 ? { ...s, name: 'hot' } : s)),
    };
    const lines = shardsConfigYaml(servers, renamed).split('\n');
    expect(lines).toContain(
      `      - { db: "mysql://root@127.0.0.1:${a.port}/shop_0", table: "async_task_2", name: "hot" }`,
    );
    expect(lines).toContain(
      `      - { db: "mysql://root@127.0.0.1:${a.port}/shop_0", table: "async_task_0" }`,
    );
    expect(lines).toContain(
      `      - { db: "mysql://root@127.0.0.1:${a.port}/shop_0", table: "async_task_3" }`,
    );
  });

  it("lists each shard's due event ids, as many as the ground truth counts", async () => {
    const ids = await dueEventIds(servers, layout);
    const truth = await groundTruth(servers, layout);
    for (const s of truth.shards) expect(ids.get(s.name)?.length, s.name).toBe(s.due);
    const all = [...ids.values()].flat();
    expect(new Set(all).size).toBe(all.length);
    expect(ids.get('shop_1.async_task_5')?.every((id) => id.startsWith('evt-5-'))).toBe(true);
  });

  it('a paused server hangs, resumes, and a killed one restarts with its data', async () => {
    const b = servers[1] as MariadbServer;
    b.pause();
    expect(await refusesConnections(b.port, 1000)).toBe(true);
    b.resume();
    expect(await refusesConnections(b.port)).toBe(false);
    const pid = b.pid;
    await b.kill();
    expect(b.running).toBe(false);
    expect(await refusesConnections(b.port)).toBe(true);
    await b.restart();
    expect(b.pid).not.toBe(pid);
    const shard = layout.shards.find((s) => s.server === 1);
    const row = await one<{ n: number }>(b, `SELECT COUNT(*) AS n FROM ${shard?.database}.${shard?.table}`);
    expect(Number(row.n)).toBe(shard?.rows);
  });

  it('a stopped server refuses connections and its process is gone', async () => {
    const [a] = servers as [MariadbServer];
    const pid = a.pid;
    expect(await refusesConnections(a.port)).toBe(false);
    await a.stop();
    expect(a.running).toBe(false);
    expect(await refusesConnections(a.port)).toBe(true);
    expect(() => process.kill(pid, 0)).toThrow();
    await expect(groundTruth(servers, layout)).rejects.toThrow(/ECONNREFUSED/);
    // The truth of what is left: the layout without the stopped server's shards.
    const rest = await groundTruth(servers, { shards: layout.shards.filter((s) => s.server !== 0) });
    expect(rest.shards.map((s) => s.name)).toEqual(
      layout.shards.filter((s) => s.server === 1).map((s) => s.name),
    );
    expect(rest.total).toBe(layout.shards.filter((s) => s.server === 1).reduce((n, s) => n + s.rows, 0));
  });

  it('stopping them all closes every port and removes their directories', async () => {
    await stopMariadbServers(servers);
    for (const server of servers) {
      expect(server.running).toBe(false);
      expect(await refusesConnections(server.port)).toBe(true);
      expect(existsSync(server.dir)).toBe(false);
    }
  });
});
