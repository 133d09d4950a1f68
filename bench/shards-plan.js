/**
 * How bench/shards.js gets the statements its plain baseline replays: one taskrecon run with
 * MariaDB's general log on (log_output TABLE) for one server, split by connection, and turned into
 * a plan for bench/shards-replay.js covering every shard and server.
 */
import { readFileSync } from 'node:fs';
import { measure } from './measure.js';

/** Runs `args` of taskrecon in `cwd`, the general log of `server` on, and returns the run and what it logged. */
export async function capture(server, runJs, args, cwd, stdout) {
  const admin = await server.connect('mysql');
  try {
    await admin.query(
      "SET GLOBAL general_log = 0; TRUNCATE mysql.general_log; SET GLOBAL log_output = 'TABLE'",
    );
    await admin.query('SET GLOBAL general_log = 1');
    const run = await measure(process.execPath, [runJs, ...args], { cwd, stdout });
    await admin.query('SET GLOBAL general_log = 0');
    const [entries] = await admin.query(
      `SELECT thread_id AS thread, command_type AS command, CONVERT(argument USING utf8mb4) AS sql_text
       FROM mysql.general_log WHERE thread_id <> CONNECTION_ID() AND command_type IN ('Query', 'Execute')`,
    );
    return { run, entries };
  } finally {
    await admin.end();
  }
}

/**
 * The replay plan from one server's log: the connections that touched `shard` (only its statements
 * when a connection touched other shards too) are replayed for every shard, renamed; connections
 * that touched no shard are the server's own set-up, replayed once per server.
 */
export function buildPlan(entries, shard, layout, servers, concurrency) {
  const threads = new Map();
  for (const e of entries) {
    if (!threads.has(e.thread)) threads.set(e.thread, []);
    threads.get(e.thread).push(e.sql_text);
  }
  const own = new RegExp(`\\b${shard.table}\\b`);
  const anyShard = /\basync_task_\d+\b/;
  const shardConnections = [];
  const serverConnections = [];
  let shared = 0;
  for (const list of threads.values()) {
    const touched = list.filter((sql) => anyShard.test(sql));
    if (touched.length === 0) serverConnections.push(list);
    else if (touched.every((sql) => own.test(sql))) shardConnections.push(list);
    else if (touched.some((sql) => own.test(sql))) {
      shared += 1;
      shardConnections.push(list.filter((sql) => own.test(sql)));
    }
  }
  const rename = (sql, to) =>
    sql.replace(new RegExp(`\\b${shard.table}\\b`, 'g'), to.table).replaceAll(shard.database, to.database);
  const units = [];
  servers.forEach((server, i) => {
    const first = layout.shards.find((s) => s.server === i);
    if (serverConnections.length && first)
      units.push({
        host: server.host,
        port: server.port,
        database: first.database,
        phase: 'server',
        connections: serverConnections,
      });
  });
  for (const s of layout.shards) {
    const server = servers[s.server];
    units.push({
      host: server.host,
      port: server.port,
      database: s.database,
      phase: 'shard',
      connections: shardConnections.map((list) => list.map((sql) => rename(sql, s))),
    });
  }
  const perShard = shardConnections.reduce((n, list) => n + list.length, 0);
  const perServer = serverConnections.reduce((n, list) => n + list.length, 0);
  return {
    plan: { concurrency, units },
    perShard,
    perServer,
    shared,
    sample: shardConnections.flat(),
  };
}

export function shardedResult(file, run) {
  if (run.code > 2) {
    let said = run.stderr.trim().split('\n').slice(0, 6).join(' ');
    try {
      const { error } = JSON.parse(readFileSync(file, 'utf8'));
      said = `${error.message}${error.hint ? ` (${error.hint})` : ''}`;
    } catch {
      // no JSON error: the stderr lines say it
    }
    return { ok: false, why: `exited ${run.code}: ${said}` };
  }
  let json;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return { ok: false, why: `printed no JSON (exit ${run.code})` };
  }
  if (!Array.isArray(json.shards)) return { ok: false, why: 'printed JSON without a `shards` array' };
  const down = json.shards.filter((s) => !s.ok);
  if (down.length) return { ok: false, why: `reported shards not ok: ${down.map((s) => s.name).join(', ')}` };
  return { ok: true, json };
}
