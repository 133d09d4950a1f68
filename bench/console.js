#!/usr/bin/env node
/* global fetch */
/**
 * The console's failed list on a 1M-row task table (the performance target: a page in ≤ 150 ms, keyset pages, never
 * OFFSET): the real `taskrecon console` process answering GET /tasks?list=failed over HTTP, at page 1
 * and at page 1,000 (reached by following the "next" links, as a user would), medians of repeated
 * requests, and the server's RSS before, during and after the walk. Beside it, the raw statements
 * of the same page straight on the server, and what OFFSET would cost at page 1,000.
 *
 *   npm run build && node bench/console.js [--rows 1000000] [--runs 7]
 *
 * Writes its own section of bench/RESULTS.md. Uses the database taskrecon_bench_console on
 * 127.0.0.1 (built once, reused when it holds the asked rows).
 */
import mysql from 'mysql2/promise';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { asyncTaskDdl, auditDdl } from '../dist/db/ddl.js';
import { mysqlDialect } from '../dist/db/engines/mysql/dialect.js';
import { machineFacts, markdownTable, updateSection } from './results.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUN_JS = join(ROOT, 'bin', 'run.js');
const DATABASE = 'taskrecon_bench_console';
const DSN = `mysql://root@127.0.0.1:3306/${DATABASE}`;
const TARGET_MS = 150;
const PAGES = 1000;

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '7' },
    out: { type: 'string', default: join(ROOT, 'bench', 'RESULTS.md') },
  },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const log = (m) => console.error(`[bench console ${new Date().toISOString().slice(11, 19)}] ${m}`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)];

/** 1M tasks: 80% success, 12% failed (120k: 2,400 pages of 50), the rest pending/processing/compensated. */
async function build(sql) {
  await sql.query(`CREATE DATABASE IF NOT EXISTS ${DATABASE}`);
  await sql.query(`USE ${DATABASE}`);
  const [have] = await sql.query(
    "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = ? AND table_name = 'async_task'",
    [DATABASE],
  );
  if (Number(have[0].n) === 1) {
    const [[count]] = await sql.query('SELECT COUNT(*) AS n FROM async_task');
    if (Number(count.n) === ROWS) return log(`reusing ${ROWS} rows`);
    await sql.query('DROP TABLE async_task');
  }
  for (const ddl of [...asyncTaskDdl(mysqlDialect), ...auditDdl(mysqlDialect)]) await sql.query(ddl);
  log(`building ${ROWS} rows`);
  const chunk = 100_000;
  for (let from = 0; from < ROWS; from += chunk) {
    const n = Math.min(chunk, ROWS - from);
    await sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
       SELECT ELT(1 + seq % 4, 'coupon', 'points', 'sms', 'order'), CONCAT('order-', ${from} + seq), CONCAT('evt-', ${from} + seq),
              JSON_OBJECT('orderId', CONCAT('order-', ${from} + seq), 'userId', seq % 9973),
              CASE WHEN seq % 100 < 80 THEN 2 WHEN seq % 100 < 92 THEN 3 WHEN seq % 100 < 96 THEN 0 WHEN seq % 100 < 98 THEN 1 ELSE 4 END,
              seq % 9, NOW() - INTERVAL (seq % 604800) SECOND,
              IF(seq % 100 BETWEEN 80 AND 91, ELT(1 + seq % 3, 'HTTP 503 from partner', 'cURL error 28: Operation timed out', 'deadlock found'), NULL),
              NOW() - INTERVAL (seq % 604800) SECOND, NOW() - INTERVAL (seq % 300000) SECOND
         FROM seq_1_to_${n}`,
    );
  }
  await sql.query('ANALYZE TABLE async_task');
}

function startConsole() {
  const child = spawn(process.execPath, [RUN_JS, 'console', '--db', DSN, '--read-only'], {
    env: { ...process.env, NO_COLOR: '1' },
  });
  child.stderr.resume();
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (url) => resolve({ child, url }));
    child.once('exit', (code) => reject(new Error(`console exited ${code}`)));
  });
}

function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

async function timedGet(url, cookie) {
  const t = performance.now();
  const res = await fetch(url, { headers: { cookie } });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return { ms: performance.now() - t, body };
}

function nextLink(origin, body) {
  const m = /<a rel="next" href="([^"]+)"/.exec(body);
  return m ? `${origin}${m[1].replace(/&amp;/g, '&')}` : undefined;
}

async function main() {
  const sql = await mysql.createConnection({ host: '127.0.0.1', user: 'root', multipleStatements: true });
  await build(sql);
  const { child, url } = await startConsole();
  const origin = new URL(url).origin;
  try {
    const res = await fetch(url, { redirect: 'manual' });
    const cookie = res.headers.get('set-cookie').split(';')[0];
    const first = `${origin}/tasks?list=failed`;
    await timedGet(first, cookie); // warm the statement path once
    const rssStart = rssMb(child.pid);
    const page1 = [];
    for (let i = 0; i < RUNS; i++) page1.push((await timedGet(first, cookie)).ms);
    log(`page 1: ${median(page1).toFixed(1)} ms`);
    let link = first;
    const walk = [];
    const rssDuring = [];
    for (let p = 1; p < PAGES; p++) {
      const { ms, body } = await timedGet(link, cookie);
      walk.push(ms);
      link = nextLink(origin, body);
      if (!link) throw new Error(`the list ended at page ${p}`);
      if (p % 250 === 0) rssDuring.push(rssMb(child.pid).rss);
    }
    const page1000 = [];
    for (let i = 0; i < RUNS; i++) page1000.push((await timedGet(link, cookie)).ms);
    log(`page ${PAGES}: ${median(page1000).toFixed(1)} ms`);
    const filtered = [];
    for (let i = 0; i < RUNS; i++)
      filtered.push((await timedGet(`${first}&error=timed%20out&biz=sms`, cookie)).ms);
    const rssEnd = rssMb(child.pid);

    // Raw: the same keyset statement at page 1,000, and the OFFSET a naive console would run.
    await sql.query(`USE ${DATABASE}`);
    const cursor = JSON.parse(Buffer.from(new URL(link).searchParams.get('after'), 'base64url').toString());
    const raw = async (statement, params) => {
      const xs = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await sql.query(statement, params);
        xs.push(performance.now() - t);
      }
      return median(xs);
    };
    const cols =
      'id, biz_type, biz_id, event_id, status, retry_count, UNIX_TIMESTAMP(next_retry_time), LEFT(last_error, 1000), UNIX_TIMESTAMP(created_at), UNIX_TIMESTAMP(updated_at)';
    const keysetRaw = await raw(
      `SELECT ${cols} FROM async_task WHERE status = 3 AND next_retry_time IS NOT NULL AND (next_retry_time < FROM_UNIXTIME(?) OR (next_retry_time = FROM_UNIXTIME(?) AND id < ?)) ORDER BY next_retry_time DESC, id DESC LIMIT 51`,
      [cursor[0], cursor[0], cursor[1]],
    );
    const offsetRaw = await raw(
      `SELECT ${cols} FROM async_task WHERE status = 3 ORDER BY next_retry_time DESC, id DESC LIMIT 50 OFFSET ${(PAGES - 1) * 50}`,
      [],
    );
    const [[failed]] = await sql.query('SELECT COUNT(*) AS n FROM async_task WHERE status = 3');
    const [[pool]] = await sql.query('SELECT ROUND(@@innodb_buffer_pool_size / 1048576) AS mb');
    const [[size]] = await sql.query(
      "SELECT ROUND((data_length + index_length) / 1048576) AS mb FROM information_schema.tables WHERE table_schema = ? AND table_name = 'async_task'",
      [DATABASE],
    );
    const poolMb = Number(pool.mb);
    const tableMb = Number(size.mb);

    const ok = (ms) => (ms <= TARGET_MS ? 'yes' : 'NO');
    const body = `## console: the failed list of a 1M-row table, keyset pages

\`bench/console.js\`: the real \`taskrecon console\` process (read-only) on \`${ROWS.toLocaleString('en-US')}\` rows of
\`async_task\` (${Number(failed.n).toLocaleString('en-US')} failed: 80% success, 12% failed, the rest pending, processing,
compensated), \`GET /tasks?list=failed\` over HTTP on loopback, the whole HTML page of 50 rows
received, median of ${RUNS}; page ${PAGES.toLocaleString('en-US')} reached by following the "next" links from page 1.
Target: ≤ ${TARGET_MS} ms a page, RSS flat. The table (${tableMb} MB) is larger than the buffer pool
(${poolMb} MB): a page first visited on the walk may read its rows from disk (the worst honest
case); pages 1 and ${PAGES.toLocaleString('en-US')} are then asked ${RUNS} times each (warm).

${machineFacts()}

${markdownTable([
  { page: '1', 'median ms': median(page1).toFixed(1), 'target ≤ 150 ms': ok(median(page1)) },
  { page: String(PAGES), 'median ms': median(page1000).toFixed(1), 'target ≤ 150 ms': ok(median(page1000)) },
  {
    page: `each of pages 2…${PAGES - 1} once, on the walk (median)`,
    'median ms': median(walk).toFixed(1),
    'target ≤ 150 ms': ok(median(walk)),
  },
  {
    page: 'the same walk, p95 / max',
    'median ms': `${p95(walk).toFixed(1)} / ${Math.max(...walk).toFixed(1)}`,
    'target ≤ 150 ms': ok(p95(walk)),
  },
  {
    page: '1, filtered: biz type sms, error contains "timed out"',
    'median ms': median(filtered).toFixed(1),
    'target ≤ 150 ms': ok(median(filtered)),
  },
])}

The statement behind page ${PAGES} straight on the server (keyset, one range of the (status,
next_retry_time) index read backwards): ${keysetRaw.toFixed(1)} ms; the same page by \`OFFSET ${((PAGES - 1) * 50).toLocaleString('en-US')}\`:
${offsetRaw.toFixed(1)} ms — what a console paging by OFFSET would pay on every page that deep.

Console RSS: ${rssStart.rss.toFixed(0)} MB before the walk, ${rssDuring.map((r) => r.toFixed(0)).join(' / ')} MB at pages
250 / 500 / 750, ${rssEnd.rss.toFixed(0)} MB after (peak ${rssEnd.hwm.toFixed(0)} MB): a page holds its 50 rows only.`;
    updateSection(values.out, 'console', body);
    log(`wrote ${values.out}`);
  } finally {
    child.kill('SIGINT');
    await sql.end();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
