import {
  asyncTaskDdl,
  createDatabase,
  dropDatabase,
  openShardDb,
  quoteId,
  timeSql,
  type ShardDb,
  type ShardServer,
} from './shard-sql.js';

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
 * The rows of one shard, made by the server in one INSERT … SELECT (MariaDB's SEQUENCE engine,
 * PostgreSQL's generate_series), the same rows on either engine.
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
function seedSql(engine: ShardDb['engine'], shard: ShardSpec): string {
  const k = shard.index;
  const { now, plus, minus } = timeSql(engine);
  const my = engine === 'mysql';
  const text = (...parts: string[]) => (my ? `CONCAT(${parts.join(', ')})` : parts.join(' || '));
  const biz = (n: string) => `(${n} + ${k}) % 5`;
  const generated = my
    ? `SELECT seq AS n, (seq + 3 * ${k}) % 20 AS b, ELT(1 + ${biz('seq')}, 'payment', 'sms', 'refund', 'coupon', 'notify') AS biz,
        ${now} AS now0, ${minus(now, '5000 + seq % 80000')} AS created FROM seq_1_to_${shard.rows}`
    : `SELECT n, (n + 3 * ${k}) % 20 AS b, (ARRAY['payment', 'sms', 'refund', 'coupon', 'notify'])[1 + ${biz('n')}] AS biz,
        ${now} AS now0, ${minus(now, '5000 + n % 80000')} AS created FROM generate_series(1, ${shard.rows}) AS n`;
  return `INSERT INTO ${quoteId(engine, shard.table)} (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
SELECT biz, ${text(`'biz-${k}-'`, my ? 'n' : 'n::text')}, ${text(`'evt-${k}-'`, my ? 'n' : 'n::text')},
  ${my ? 'JSON_OBJECT' : 'jsonb_build_object'}('n', n, 'shard', ${k}),
  CASE WHEN b <= 5 OR b = 19 THEN 0 WHEN b <= 7 THEN 1 WHEN b <= 15 THEN 2 WHEN b <= 17 THEN 3 ELSE 4 END,
  CASE WHEN b = 19 THEN 3 + n % 5 WHEN b IN (16, 17) THEN 5 ELSE 0 END,
  CASE WHEN b <= 3 OR b = 19 THEN ${minus('now0', `1 + n % 3600 + 100 * ${k}`)}
       WHEN b <= 5 THEN ${plus('now0', '3600 + n % 3600')} ELSE created END,
  CASE WHEN b IN (16, 17) THEN ${text("'timeout calling '", 'biz')} END,
  created,
  CASE WHEN b = 6 THEN ${minus('now0', '1200 + n % 3600')} WHEN b = 7 THEN ${minus('now0', 'n % 60')}
       WHEN b BETWEEN 8 AND 15 THEN ${plus('created', 'n % 97')} ELSE created END
FROM (${generated}) g`;
}

/**
 * Runs `work` once per database of the layout on a connection to it; the databases of one server
 * one after the other, the servers in parallel.
 */
export async function perDatabase<T>(
  servers: ShardServer[],
  layout: ShardLayout,
  work: (db: ShardDb, shards: ShardSpec[]) => Promise<T[]>,
): Promise<T[]> {
  checkServers(servers, layout);
  const results = await Promise.all(
    servers.map(async (server, index) => {
      const out: T[] = [];
      for (const { database } of databasesOf(layout).filter((d) => d.server === index)) {
        const db = await openShardDb(server, database);
        try {
          out.push(
            ...(await work(
              db,
              layout.shards.filter((s) => s.server === index && s.database === database),
            )),
          );
        } finally {
          await db.end();
        }
      }
      return out;
    }),
  );
  return results.flat();
}

/** Runs `work` on an admin connection to each server holding shards, with that server's databases. */
async function perServerAdmin(
  servers: ShardServer[],
  layout: ShardLayout,
  work: (admin: ShardDb, databases: string[]) => Promise<void>,
): Promise<void> {
  checkServers(servers, layout);
  await Promise.all(
    servers.map(async (server, index) => {
      const databases = databasesOf(layout)
        .filter((d) => d.server === index)
        .map((d) => d.database);
      if (databases.length === 0) return;
      const admin = await openShardDb(server);
      try {
        await work(admin, databases);
      } finally {
        await admin.end();
      }
    }),
  );
}

export function checkServers(servers: ShardServer[], layout: ShardLayout): void {
  const missing = layout.shards.find((s) => !servers[s.server]);
  if (missing)
    throw new Error(`shard ${missing.name} is on server ${missing.server}, but ${servers.length} were given`);
}

/**
 * Creates the layout's databases and tables (the engine's reference DDL; existing tables are
 * dropped first) and fills each shard with its deterministic mix: a shard holds the same rows on
 * MariaDB and PostgreSQL. The servers are seeded in parallel.
 */
export async function seedShards(servers: ShardServer[], layout: ShardLayout): Promise<void> {
  await perServerAdmin(servers, layout, async (admin, databases) => {
    for (const database of databases) await createDatabase(admin, database);
  });
  await perDatabase(servers, layout, async (db, shards) => {
    for (const shard of shards) {
      await db.query(`DROP TABLE IF EXISTS ${quoteId(db.engine, shard.table)}`);
      for (const ddl of asyncTaskDdl(db.engine, shard.table)) await db.query(ddl);
      await db.query(seedSql(db.engine, shard));
    }
    return [];
  });
}

/** Drops the layout's databases (for the machine's servers, which outlive the test). */
export async function dropShards(servers: ShardServer[], layout: ShardLayout): Promise<void> {
  await perServerAdmin(servers, layout, async (admin, databases) => {
    for (const database of databases) await dropDatabase(admin, database);
  });
}

/**
 * A taskrecon.config.yaml holding one sharded source over the layout: one `shards:` entry per
 * database, its tables as a range `async_task_{a..b}` when they are consecutive (a shard whose
 * name is not `<database>.<table>` gets its own entry with `name:`).
 */
export function shardsConfigYaml(
  servers: ShardServer[],
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
    const dsn = (servers[server] as ShardServer).dsn(database);
    const here = layout.shards.filter((s) => s.server === server && s.database === database);
    // A shard named otherwise than `<database>.<table>` is its own entry, with `name:`.
    for (const s of here.filter((s) => s.name !== `${database}.${s.table}`))
      lines.push(`      - { db: "${dsn}", table: "${s.table}", name: "${s.name}" }`);
    const shards = here.filter((s) => s.name === `${database}.${s.table}`);
    if (shards.length === 0) continue;
    const suffixes = shards.map((s) => /^(.*?)(\d+)$/.exec(s.table));
    const base = suffixes[0]?.[1];
    const numbers = suffixes.map((m) => (m && m[1] === base ? Number(m[2]) : NaN));
    const consecutive = numbers.every((n, i) => n === (numbers[0] ?? NaN) + i) && shards.length > 1;
    const tables = consecutive
      ? [`${base}{${numbers[0]}..${numbers[numbers.length - 1]}}`]
      : shards.map((s) => s.table);
    for (const table of tables) lines.push(`      - { db: "${dsn}", table: "${table}" }`);
  }
  return `${lines.join('\n')}\n`;
}

/** The event ids of each shard's due tasks (pending, next_retry_time ≤ the shard's now), by shard name. */
export async function dueEventIds(
  servers: ShardServer[],
  layout: ShardLayout,
): Promise<Map<string, string[]>> {
  const lists = await perDatabase(servers, layout, async (db, shards) => {
    const out: Array<[string, string[]]> = [];
    for (const shard of shards) {
      const rows = await db.query<{ event_id: string }>(
        `SELECT event_id FROM ${quoteId(db.engine, shard.table)} WHERE status = 0 AND next_retry_time <= ${timeSql(db.engine).now} ORDER BY event_id`,
      );
      out.push([shard.name, rows.map((r) => r.event_id)]);
    }
    return out;
  });
  return new Map(lists);
}
