import type { Connection } from 'mysql2/promise';
import { mysqlDdl, quoteMysqlId } from '../../src/db/engines/mysql/ddl.js';
import type { MariadbEndpoint } from './mariadb-servers.js';

/** One shard: one async_task table in one database on one server. */
export interface ShardSpec {
  /** `<database>.<table>`, the name taskrecon gives a shard without `name:`. */
  name: string;
  /** Position in the layout (0…), also the table's suffix and the seed's variation. */
  index: number;
  /** Index into the servers array given to seedShards / groundTruth / shardsConfigYaml. */
  server: number;
  database: string;
  table: string;
  /** Rows seedShards inserts. */
  rows: number;
}

export interface ShardLayout {
  shards: ShardSpec[];
}

export interface LayoutOptions {
  /** How many servers (default 3). */
  servers?: number;
  /** Tables per server (default 4): server s holds async_task_{4s..4s+3}. */
  tablesPerServer?: number;
  /** Database on server s: `${databasePrefix}${s}` (default `shop_`; make it unique on a shared server). */
  databasePrefix?: string;
  /** Rows of shard i: rowsPerShard + i × rowsStep (defaults 200 and 37: every shard differs). */
  rowsPerShard?: number;
  rowsStep?: number;
}

/** The classic layout: databases shop_0…, tables async_task_0…, four per server, numbered across servers. */
export function shardLayout(options: LayoutOptions = {}): ShardLayout {
  const servers = options.servers ?? 3;
  const perServer = options.tablesPerServer ?? 4;
  const prefix = options.databasePrefix ?? 'shop_';
  const shards: ShardSpec[] = [];
  for (let s = 0; s < servers; s++)
    for (let t = 0; t < perServer; t++) {
      const index = s * perServer + t;
      const database = `${prefix}${s}`;
      const table = `async_task_${index}`;
      shards.push({
        name: `${database}.${table}`,
        index,
        server: s,
        database,
        table,
        rows: (options.rowsPerShard ?? 200) + index * (options.rowsStep ?? 37),
      });
    }
  return { shards };
}

function databasesOf(layout: ShardLayout): Array<{ server: number; database: string }> {
  const seen = new Map<string, { server: number; database: string }>();
  for (const s of layout.shards)
    seen.set(`${s.server}/${s.database}`, { server: s.server, database: s.database });
  return [...seen.values()];
}

/**
 * The rows of one shard, made by the server from its SEQUENCE engine in one INSERT … SELECT.
 * Row n falls in bucket b = (n + 3k) % 20 (k the shard's index), so the mix differs per shard:
 *   b 0–3, 19  pending, due (next_retry_time 1 s … 1 h + 100k s ago; b 19 with retries)
 *   b 4–5      pending, not due (1–2 h ahead)
 *   b 6        processing, stuck (updated 20 min … 80 min ago)
 *   b 7        processing, fresh (updated 0–59 s ago: not stuck for 9 minutes)
 *   b 8–15     success, latency n % 97 seconds
 *   b 16–17    failed (5 retries, an error)
 *   b 18       compensated
 * Biz types cycle over five names; every row was created 5000 s … 23.6 h ago.
 */
function seedSql(shard: ShardSpec): string {
  const k = shard.index;
  const t = `${quoteMysqlId(shard.database)}.${quoteMysqlId(shard.table)}`;
  return `INSERT INTO ${t} (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
SELECT biz, CONCAT('biz-', ${k}, '-', n), CONCAT('evt-', ${k}, '-', n), JSON_OBJECT('n', n, 'shard', ${k}),
  CASE WHEN b <= 5 OR b = 19 THEN 0 WHEN b <= 7 THEN 1 WHEN b <= 15 THEN 2 WHEN b <= 17 THEN 3 ELSE 4 END,
  CASE WHEN b = 19 THEN 3 + n % 5 WHEN b IN (16, 17) THEN 5 ELSE 0 END,
  CASE WHEN b <= 3 OR b = 19 THEN now0 - INTERVAL (1 + n % 3600 + 100 * ${k}) SECOND
       WHEN b <= 5 THEN now0 + INTERVAL (3600 + n % 3600) SECOND ELSE created END,
  CASE WHEN b IN (16, 17) THEN CONCAT('timeout calling ', biz) END,
  created,
  CASE WHEN b = 6 THEN now0 - INTERVAL (1200 + n % 3600) SECOND WHEN b = 7 THEN now0 - INTERVAL (n % 60) SECOND
       WHEN b BETWEEN 8 AND 15 THEN created + INTERVAL (n % 97) SECOND ELSE created END
FROM (SELECT seq AS n, (seq + 3 * ${k}) % 20 AS b, ELT(1 + (seq + ${k}) % 5, 'payment', 'sms', 'refund', 'coupon', 'notify') AS biz,
        NOW() AS now0, NOW() - INTERVAL (5000 + seq % 80000) SECOND AS created
      FROM seq_1_to_${shard.rows}) g`;
}

/** Runs `work` once per server holding shards of the layout, on its own connection, servers in parallel. */
export async function perServer<T>(
  servers: MariadbEndpoint[],
  layout: ShardLayout,
  work: (conn: Connection, shards: ShardSpec[], server: number) => Promise<T[]>,
): Promise<T[]> {
  const results = await Promise.all(
    servers.map(async (endpoint, server) => {
      const shards = layout.shards.filter((s) => s.server === server);
      if (shards.length === 0) return [];
      const conn = await endpoint.connect();
      try {
        return await work(conn, shards, server);
      } finally {
        await conn.end();
      }
    }),
  );
  return results.flat();
}

export function checkServers(servers: MariadbEndpoint[], layout: ShardLayout): void {
  const missing = layout.shards.find((s) => !servers[s.server]);
  if (missing)
    throw new Error(`shard ${missing.name} is on server ${missing.server}, but ${servers.length} were given`);
}

/**
 * Creates the layout's databases and tables (the reference DDL; existing tables are dropped first)
 * and fills each shard with its deterministic mix. The servers are seeded in parallel.
 */
export async function seedShards(servers: MariadbEndpoint[], layout: ShardLayout): Promise<void> {
  checkServers(servers, layout);
  await perServer(servers, layout, async (conn, shards) => {
    for (const { database } of databasesOf({ shards }))
      await conn.query(`CREATE DATABASE IF NOT EXISTS ${quoteMysqlId(database)} CHARACTER SET utf8mb4`);
    for (const shard of shards) {
      const t = `${quoteMysqlId(shard.database)}.${quoteMysqlId(shard.table)}`;
      await conn.query(`DROP TABLE IF EXISTS ${t}`);
      for (const ddl of mysqlDdl.asyncTask(t, shard.table)) await conn.query(ddl);
      await conn.query(`USE ${quoteMysqlId(shard.database)}`);
      await conn.query(seedSql(shard));
    }
    return [];
  });
}

/** Drops the layout's databases (for the machine's server, which outlives the test). */
export async function dropShards(servers: MariadbEndpoint[], layout: ShardLayout): Promise<void> {
  await perServer(servers, layout, async (conn, shards) => {
    for (const { database } of databasesOf({ shards }))
      await conn.query(`DROP DATABASE IF EXISTS ${quoteMysqlId(database)}`);
    return [];
  });
}

/**
 * A taskrecon.config.yaml holding one sharded source over the layout: one `shards:` entry per
 * database, its tables as a range `async_task_{a..b}` when they are consecutive.
 */
export function shardsConfigYaml(
  servers: MariadbEndpoint[],
  layout: ShardLayout,
  options: { source?: string; profile?: string } = {},
): string {
  checkServers(servers, layout);
  const lines = [
    'sources:',
    `  ${options.source ?? 'tasks'}:`,
    `    profile: ${options.profile ?? 'async-task'}`,
    '    shards:',
  ];
  for (const { server, database } of databasesOf(layout)) {
    const shards = layout.shards.filter((s) => s.server === server && s.database === database);
    const suffixes = shards.map((s) => /^(.*?)(\d+)$/.exec(s.table));
    const base = suffixes[0]?.[1];
    const numbers = suffixes.map((m) => (m && m[1] === base ? Number(m[2]) : NaN));
    const consecutive = numbers.every((n, i) => n === (numbers[0] ?? NaN) + i) && shards.length > 1;
    const tables = consecutive
      ? [`${base}{${numbers[0]}..${numbers[numbers.length - 1]}}`]
      : shards.map((s) => s.table);
    const dsn = (servers[server] as MariadbEndpoint).dsn(database);
    for (const table of tables) lines.push(`      - { db: "${dsn}", table: "${table}" }`);
  }
  return `${lines.join('\n')}\n`;
}
