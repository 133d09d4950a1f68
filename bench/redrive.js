// Over 300 lines: one benchmark run end to end on either engine (seeding, raw baselines, scenarios, the markdown section), read top to bottom.
/**
 * redrive throughput (the performance targets): tasks/s with a no-op dispatcher (mark-only) and with a loopback
 * HTTP handler, in one process and in four concurrent processes, counting duplicate deliveries.
 * Each figure is the median of 3 runs over a freshly seeded backlog of due async_task rows, timed
 * from the first process's start to the last one's exit (start-up included) and, separately,
 * by the run's own durationMs. Writes its section of bench/RESULTS.md.
 *
 *   npm run build && node bench/redrive.js [--engine mysql|postgres] [--noop-tasks 50000] [--http-tasks 20000] [--runs 3]
 *
 * Needs the local MariaDB (root@127.0.0.1:3306) or, with `--engine postgres`, the local PostgreSQL
 * (postgres@127.0.0.1:5432); creates and drops the database taskrecon_bench_redrive. On PostgreSQL
 * it runs the no-op cases only (the HTTP cases measure the dispatcher, not the engine) and writes
 * the section `redrive-postgres`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { Agent, fetch, request } from 'undici';
import { median } from './measure.js';
import { machineFacts, updateSection } from './results.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin/run.js');
const HANDLER = join(ROOT, 'test/fixtures/redrive/counting-handler.js');
const SCHEMA = 'taskrecon_bench_redrive';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ENGINE = process.argv.includes('--engine')
  ? process.argv[process.argv.indexOf('--engine') + 1]
  : 'mysql';
if (ENGINE !== 'mysql' && ENGINE !== 'postgres') throw new Error(`--engine mysql or postgres, not ${ENGINE}`);
const PG = ENGINE === 'postgres';
const SERVER =
  process.env.TASKRECON_BENCH_DB ??
  (PG ? 'postgres://postgres@127.0.0.1:5432' : 'mysql://root@127.0.0.1:3306');
const NOOP_TASKS = arg('noop-tasks', 50_000);
const HTTP_TASKS = arg('http-tasks', 20_000);
const RUNS = arg('runs', 3);
const dsn = `${SERVER}/${SCHEMA}`;

/** One admin connection to the bench database; `query` answers rows on either engine. */
async function openAdmin() {
  if (PG) {
    const server = new pg.Client({ connectionString: `${SERVER}/postgres` });
    await server.connect();
    await server.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
    await server.query(`CREATE DATABASE ${SCHEMA}`);
    await server.end();
    const client = new pg.Client({ connectionString: dsn });
    await client.connect();
    return {
      query: async (sql, params) => (await client.query(sql, params)).rows,
      drop: async () => {
        await client.end();
        const again = new pg.Client({ connectionString: `${SERVER}/postgres` });
        await again.connect();
        await again.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
        await again.end();
      },
    };
  }
  const conn = await mysql.createConnection({ uri: `${SERVER}/`, multipleStatements: true });
  await conn.query(`DROP DATABASE IF EXISTS ${SCHEMA}; CREATE DATABASE ${SCHEMA} CHARACTER SET utf8mb4`);
  await conn.query(`USE ${SCHEMA}`);
  return {
    query: async (sql, params) => (await conn.query(sql, params))[0],
    drop: async () => {
      await conn.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
      await conn.end();
    },
  };
}
const admin = await openAdmin();

const GNU_TIME = '/usr/bin/time';

/** Runs the CLI; its JSON answer, with `peakRssMb` (GNU time's %M) when GNU time is there. */
function run(args, cwd) {
  const rssFile = existsSync(GNU_TIME)
    ? join(mkdtempSync(join(tmpdir(), 'taskrecon-bench-rss-')), 'rss')
    : undefined;
  const argv = rssFile
    ? [GNU_TIME, ['-f', '%M', '-o', rssFile, process.execPath, BIN, ...args]]
    : [process.execPath, [BIN, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv[1], {
      cwd,
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`exit ${code}: ${err}`));
      const result = JSON.parse(out);
      if (rssFile) {
        const lines = readFileSync(rssFile, 'utf8').trim().split('\n');
        result.peakRssMb = Number(lines[lines.length - 1]) / 1024;
        rmSync(dirname(rssFile), { recursive: true, force: true });
      }
      resolve(result);
    });
  });
}

function dir(yaml) {
  const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bench-redrive-'));
  writeFileSync(join(cwd, 'taskrecon.config.yaml'), yaml);
  return cwd;
}

let seeded = 0;
/** A fresh backlog of `n` due rows; event ids are new each time, so the handler's per-attempt counts stay exact. */
async function seed(n) {
  seeded++;
  await admin.query('DROP TABLE IF EXISTS async_task');
  await run(['init', '--db', dsn, '--json'], ROOT);
  if (PG) {
    await admin.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at)
       SELECT 'coupon', 'order-' || s, 'bench-${seeded}-' || s, jsonb_build_object('orderId', s, 'amount', 100), 0,
              now() - interval '1 minute', now() - interval '1 minute', now() - interval '1 minute'
         FROM generate_series(1, ${n}) s`,
    );
    await admin.query('VACUUM (ANALYZE) async_task');
    return;
  }
  await admin.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at)
     SELECT 'coupon', CONCAT('order-', seq), CONCAT('bench-${seeded}-', seq), JSON_OBJECT('orderId', seq, 'amount', 100), 0,
            NOW() - INTERVAL 1 MINUTE, NOW() - INTERVAL 1 MINUTE, NOW() - INTERVAL 1 MINUTE
       FROM seq_1_to_${n}`,
  );
}

async function startHandler() {
  const child = spawn(process.execPath, [HANDLER, '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve) =>
    child.stdout.once('data', (d) => resolve(JSON.parse(String(d)).url)),
  );
  return {
    url,
    stats: async () => (await fetch(url.replace('/tasks', '/stats'))).json(),
    stop: () => new Promise((resolve) => (child.on('close', resolve), child.kill('SIGTERM'))),
  };
}

/** One measured run: seed, start `procs` redrive processes at once, wait for all. */
async function once(n, procs, cwd, flags) {
  await seed(n);
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: procs }, () => run(['redrive', '--json', '--pause', '0ms', ...flags], cwd)),
  );
  const wall = (performance.now() - started) / 1000;
  const claimed = results.reduce((s, r) => s + r.claimed, 0);
  const succeeded = results.reduce((s, r) => s + r.succeeded, 0);
  const inRun = Math.max(...results.map((r) => r.durationMs)) / 1000;
  const [left] = await admin.query('SELECT COUNT(*) AS n FROM async_task WHERE status <> 2');
  if (claimed !== n || succeeded !== n || Number(left.n) !== 0)
    throw new Error(`run lost work: claimed ${claimed}, succeeded ${succeeded}, left ${left.n}`);
  return {
    wallRate: n / wall,
    runRate: n / inRun,
    lostRace: results.reduce((s, r) => s + r.lostRace, 0),
    peakRssMb: Math.max(...results.map((r) => r.peakRssMb ?? Number.NaN)),
  };
}

/**
 * The raw baseline of the no-op case: the least SQL a claim-then-complete loop needs, from one
 * mysql2 connection — per page: START; SELECT … FOR UPDATE SKIP LOCKED LIMIT 500; UPDATE … status 1;
 * COMMIT; UPDATE … status 2 — with no dispatch, no fence, no bookkeeping. tasks/s.
 */
async function rawSqlBaseline(n) {
  if (PG) return rawPgBaseline(n);
  await seed(n);
  const conn = await mysql.createConnection({ uri: dsn });
  await conn.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
  const started = performance.now();
  let done = 0;
  for (;;) {
    await conn.query('START TRANSACTION');
    const [rows] = await conn.query(
      'SELECT id FROM async_task WHERE status = 0 AND next_retry_time <= NOW() ORDER BY next_retry_time, id LIMIT 500 FOR UPDATE SKIP LOCKED',
    );
    if (rows.length === 0) {
      await conn.query('COMMIT');
      break;
    }
    const ids = rows.map((r) => r.id);
    await conn.query(
      'UPDATE async_task SET status = 1, next_retry_time = NOW() + INTERVAL 300 SECOND, updated_at = NOW() WHERE id IN (?)',
      [ids],
    );
    await conn.query('COMMIT');
    await conn.query('UPDATE async_task SET status = 2, updated_at = NOW() WHERE id IN (?) AND status = 1', [
      ids,
    ]);
    done += ids.length;
  }
  const rate = done / ((performance.now() - started) / 1000);
  await conn.end();
  return rate;
}

/** The same loop through one node-postgres client: BEGIN; SELECT … FOR UPDATE SKIP LOCKED LIMIT 500; UPDATE; COMMIT; UPDATE. */
async function rawPgBaseline(n) {
  await seed(n);
  const client = new pg.Client({ connectionString: dsn });
  await client.connect();
  const started = performance.now();
  let done = 0;
  for (;;) {
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    const { rows } = await client.query(
      'SELECT id FROM async_task WHERE status = 0 AND next_retry_time <= statement_timestamp() ORDER BY next_retry_time, id LIMIT 500 FOR UPDATE SKIP LOCKED',
    );
    if (rows.length === 0) {
      await client.query('COMMIT');
      break;
    }
    const ids = rows.map((r) => r.id);
    await client.query(
      "UPDATE async_task SET status = 1, next_retry_time = statement_timestamp() + interval '300 seconds', updated_at = statement_timestamp() WHERE id = ANY($1::bigint[])",
      [ids],
    );
    await client.query('COMMIT');
    await client.query(
      'UPDATE async_task SET status = 2, updated_at = statement_timestamp() WHERE id = ANY($1::bigint[]) AND status = 1',
      [ids],
    );
    done += ids.length;
  }
  const rate = done / ((performance.now() - started) / 1000);
  await client.end();
  return rate;
}

/** The raw baseline of the HTTP case: undici POSTs of the same body to the same handler, 64 at a time, nothing else. req/s. */
async function rawHttpBaseline(url, n) {
  const agent = new Agent({ connections: 64 });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < n) {
        const i = next++;
        const body = JSON.stringify({
          eventId: `raw-${i}`,
          bizType: 'coupon',
          bizId: `order-${i}`,
          payload: { orderId: i },
          attempt: 1,
        });
        const res = await request(url, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', 'idempotency-key': `raw-${i}` },
          body,
        });
        await res.body.dump();
      }
    }),
  );
  const rate = n / ((performance.now() - started) / 1000);
  await agent.close();
  return rate;
}

async function scenario(name, n, procs, yaml, flags, handler) {
  const rates = [];
  let duplicates = 0;
  let deliveries = 0;
  for (let i = 0; i < RUNS; i++) {
    const before = handler ? await handler.stats() : undefined;
    rates.push(await once(n, procs, dir(yaml), flags));
    if (handler) {
      const after = await handler.stats();
      duplicates += after.duplicateDeliveriesPerAttempt - before.duplicateDeliveriesPerAttempt;
      deliveries += after.total - before.total;
    }
    process.stderr.write(
      `${name}: run ${i + 1} ${Math.round(rates[i].runRate)} tasks/s in-run, ${Math.round(rates[i].wallRate)} wall\n`,
    );
    perRun.push(
      `${name}, ${procs} process${procs > 1 ? 'es' : ''}, run ${i + 1}: ${Math.round(rates[i].runRate)} tasks/s in run, ${Math.round(rates[i].wallRate)} wall, peak RSS ${rates[i].peakRssMb.toFixed(1)} MB`,
    );
  }
  return {
    name,
    tasks: n,
    procs,
    wall: median(rates.map((r) => r.wallRate)),
    run: median(rates.map((r) => r.runRate)),
    lostRace: rates.reduce((s, r) => s + r.lostRace, 0),
    peakRssMb: Math.max(...rates.map((r) => r.peakRssMb)),
    duplicates: handler ? duplicates : null,
    deliveries: handler ? deliveries : null,
  };
}

const perRun = [];
const serverVersion = PG ? (await admin.query('SHOW server_version'))[0].server_version : undefined;
const rows = [];
const baselines = { sql: [], http: [] };
for (let i = 0; i < RUNS; i++) baselines.sql.push(await rawSqlBaseline(NOOP_TASKS));
process.stderr.write(`raw SQL baseline: ${baselines.sql.map(Math.round).join(', ')} tasks/s\n`);
const noop = `db: ${dsn}\nhandlers:\n  default: { type: mark-only }\n`;
rows.push(await scenario('no-op (mark-only)', NOOP_TASKS, 1, noop, ['--concurrency', '64']));
rows.push(await scenario('no-op (mark-only)', NOOP_TASKS, 4, noop, ['--concurrency', '64']));
if (!PG) {
  const handler = await startHandler();
  for (let i = 0; i < RUNS; i++) baselines.http.push(await rawHttpBaseline(handler.url, HTTP_TASKS));
  process.stderr.write(`raw HTTP baseline: ${baselines.http.map(Math.round).join(', ')} req/s\n`);
  const http = `db: ${dsn}\nhandlers:\n  default: { type: http, url: "${handler.url}", timeout: 10s }\n`;
  rows.push(await scenario('loopback HTTP', HTTP_TASKS, 1, http, ['--concurrency', '64'], handler));
  rows.push(await scenario('loopback HTTP', HTTP_TASKS, 4, http, ['--concurrency', '32'], handler));
  await handler.stop();
}
await admin.drop();

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const rawSql = median(baselines.sql);
const rawHttp = median(baselines.http);
const table = [
  `| dispatcher | processes | tasks | tasks/s (in run, median of ${RUNS}) | tasks/s (wall, start-up included) | raw baseline (median) | ratio (in run ÷ raw) | target | verdict (in run) | peak RSS per process (max of the runs) | lostRace | duplicate deliveries |`,
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => {
    const noopRow = r.name.startsWith('no-op');
    const raw = noopRow ? rawSql : rawHttp;
    return `| ${r.name} | ${r.procs} | ${fmt(r.tasks)} | ${fmt(r.run)} | ${fmt(r.wall)} | ${fmt(raw)} ${noopRow ? 'tasks/s (SQL only)' : 'req/s (undici only)'} | ${(r.run / raw).toFixed(2)}× | ${noopRow ? '≥ 10,000' : '≥ 2,000'} | ${r.run >= (noopRow ? 10_000 : 2_000) ? '**met**' : '**missed**'} | ${r.peakRssMb.toFixed(1)} MB | ${r.lostRace} | ${r.duplicates === null ? 'n/a' : `${r.duplicates} of ${fmt(r.deliveries)}`} |`;
  }),
];
const body = [
  PG ? '## redrive throughput on PostgreSQL' : '## redrive throughput',
  '',
  machineFacts({ runs: RUNS, ...(PG ? { postgres: serverVersion } : {}) }),
  '',
  ...table,
  '',
  `Every run: raw baseline ${baselines.sql.map((x) => fmt(x)).join(', ')} tasks/s; ${perRun.join('; ')}.`,
  '',
  'In-run rate: tasks ÷ the longest `durationMs` among the processes (claim → dispatch → outcome committed).',
  'Wall rate: tasks ÷ time from spawning the processes to the last exit, Node start-up and connection included.',
  `Raw baselines, measured in the same run: for no-op, one ${PG ? 'node-postgres client' : 'mysql2 connection'} issuing only the claim and completion`,
  'statements (SELECT … FOR UPDATE SKIP LOCKED LIMIT 500, UPDATE to processing, COMMIT, UPDATE to success) with nothing',
  PG
    ? `else. Each run seeds a fresh backlog with \`taskrecon init\`'s table and VACUUM ANALYZEs it. Re-run: \`node bench/redrive.js --engine postgres --runs ${RUNS}\`.`
    : 'else; for HTTP, undici POSTs of the same body to the same handler, 64 in flight, with no database at all.',
  'Duplicate deliveries: deliveries beyond the first for the same (eventId, attempt), counted by the loopback handler',
  '(`test/fixtures/redrive/counting-handler.js`, a separate process). Every run checks that every row ended `success`.',
  '',
  'Read the ratios first: when the load average at start is far above the core count, other work shares the CPUs and',
  `${PG ? 'PostgreSQL' : 'MariaDB'} with this run, and every figure here, the raw baselines included, is lower for it.`,
].join('\n');
updateSection(join(ROOT, 'bench/RESULTS.md'), PG ? 'redrive-postgres' : 'redrive', body);
process.stdout.write(`${body}\n`);
