#!/usr/bin/env node
/**
 * What the effect check costs a bulk retry: `compensate --action retry --status failed --dry-run`
 * over N failed tasks, with no diff rule (no check) and with one rule (each task's business rows and
 * sibling tasks looked up, two statements per 500 keys), beside the raw baseline of the same facts
 * read in one SQL statement (a grouped LEFT JOIN of the failed tasks to the business table).
 * Medians of 3, peak RSS of the CLI (VmHWM).
 *
 *   npm run build && node bench/effect-check.js [--rows 100000]
 *
 * Writes its own section of bench/RESULTS.md. Uses the database taskrecon_bench_effect on
 * 127.0.0.1 (dropped and rebuilt every run).
 */
import mysql from 'mysql2/promise';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { auditDdl, asyncTaskDdl } from '../dist/db/ddl.js';
import { mysqlDialect } from '../dist/db/engines/mysql/dialect.js';
import { machineFacts, updateSection } from './results.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUN_JS = join(ROOT, 'bin', 'run.js');
const DATABASE = 'taskrecon_bench_effect';
const DSN = `mysql://root@127.0.0.1:3306/${DATABASE}`;
const RUNS = 3;

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    out: { type: 'string', default: join(ROOT, 'bench', 'RESULTS.md') },
  },
});
const ROWS = Number(values.rows);
const log = (m) => console.error(`[bench effect-check ${new Date().toISOString().slice(11, 19)}] ${m}`);
const int = (n) => Math.round(n).toLocaleString('en-US');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function build(sql) {
  await sql.query(
    `DROP DATABASE IF EXISTS ${DATABASE}; CREATE DATABASE ${DATABASE} CHARACTER SET utf8mb4; USE ${DATABASE}`,
  );
  for (const s of [...asyncTaskDdl(mysqlDialect), ...auditDdl(mysqlDialect)]) await sql.query(s);
  await sql.query(
    'CREATE TABLE user_coupon (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(64) NOT NULL, KEY (order_id))',
  );
  for (let from = 1; from <= ROWS; from += 100_000) {
    const to = Math.min(ROWS, from + 99_999);
    await sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
       SELECT 'coupon', CONCAT('order-', seq), CONCAT('ev-', seq), '{}', 3, 7, NOW() - INTERVAL 1 DAY,
              'HTTP 503 from downstream', NOW() - INTERVAL 2 DAY, NOW() - INTERVAL 1 DAY
         FROM seq_${from}_to_${to}`,
    );
    // A third of the failed coupons did take effect (unsettled).
    await sql.query(
      `INSERT INTO user_coupon (order_id) SELECT CONCAT('order-', seq) FROM seq_${from}_to_${to} WHERE seq % 3 = 0`,
    );
  }
  await sql.query('ANALYZE TABLE async_task, user_coupon');
}

/** Runs the CLI in `cwd`, polling its peak RSS (VmHWM). */
function run(cwd) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [RUN_JS, 'compensate', '--action', 'retry', '--status', 'failed', '--dry-run', '--json'],
      { cwd, env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let peakKb = 0;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.resume();
    const poll = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peakKb = Math.max(peakKb, Number(m[1]));
      } catch {
        // ended
      }
    }, 50);
    child.on('close', (code) => {
      clearInterval(poll);
      const json = stdout ? JSON.parse(stdout) : undefined;
      resolve({
        code,
        seconds: (performance.now() - started) / 1000,
        ms: json?.durationMs ?? 0,
        peakRssMb: peakKb / 1024,
        json,
      });
    });
  });
}

function configDir(withRule) {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-bench-effect-'));
  writeFileSync(
    join(dir, 'taskrecon.config.yaml'),
    `db: ${DSN}\n${withRule ? 'rules:\n  - { name: coupon-issued, bizType: coupon, business: { table: user_coupon, key: order_id } }\n' : ''}`,
  );
  return dir;
}

async function main() {
  const sql = await mysql.createConnection({
    host: '127.0.0.1',
    port: 3306,
    user: 'root',
    multipleStatements: true,
  });
  log(`building ${int(ROWS)} failed tasks, ${int(ROWS / 3)} with their coupon`);
  await build(sql);
  const plain = configDir(false);
  const ruled = configDir(true);
  const load = (await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
  const results = { plain: [], ruled: [], raw: [] };
  for (let i = 0; i < RUNS; i++) {
    // Interleaved, so every kind sees the same load.
    results.plain.push(await run(plain));
    results.ruled.push(await run(ruled));
    const t0 = performance.now();
    await sql.query(
      `SELECT t.biz_id, COUNT(b.order_id) AS n FROM ${DATABASE}.async_task t LEFT JOIN ${DATABASE}.user_coupon b ON b.order_id = t.biz_id
        WHERE t.status = 3 AND t.biz_type = 'coupon' GROUP BY t.biz_id`,
    );
    results.raw.push((performance.now() - t0) / 1000);
    log(
      `run ${i + 1}: no rule ${results.plain[i].ms} ms, one rule ${results.ruled[i].ms} ms, raw ${(results.raw[i] * 1000).toFixed(0)} ms`,
    );
  }
  const refused = results.ruled[0].json?.effect?.refused ?? 0;
  await sql.query(`DROP DATABASE ${DATABASE}`);
  await sql.end();

  const plainS = median(results.plain.map((r) => r.ms)) / 1000;
  const ruledS = median(results.ruled.map((r) => r.ms)) / 1000;
  const rawS = median(results.raw);
  const rss = (rs) => Math.max(...rs.map((r) => r.peakRssMb)).toFixed(1);
  const body = [
    '## compensate: the effect check of a bulk retry',
    '',
    machineFacts({ rows: int(ROWS), 'load average when the runs started (1/5/15 min)': load }),
    '',
    '| run | time (s, median of 3, in run) | tasks/s | peak RSS (MB) |',
    '|---|---|---|---|',
    `| \`compensate --action retry --status failed --dry-run\`, no diff rule (no check) | ${plainS.toFixed(2)} | ${int(ROWS / plainS)} | ${rss(results.plain)} |`,
    `| the same with one rule covering every task (the effect check) | ${ruledS.toFixed(2)} | ${int(ROWS / ruledS)} | ${rss(results.ruled)} |`,
    `| raw baseline: the business rows of every failed task in one grouped LEFT JOIN (SQL) | ${rawS.toFixed(2)} | ${int(ROWS / rawS)} | n/a |`,
    '',
    `- the check found ${int(refused)} of ${int(ROWS)} tasks with their effect present (expected ${int(Math.floor(ROWS / 3))})`,
    `- the check's own cost: ${(ruledS - plainS).toFixed(2)} s for ${int(ROWS)} tasks, ${((ruledS - plainS) / Math.max(0.001, rawS)).toFixed(1)}× the raw baseline; the whole dry run with the check: ${(ruledS / Math.max(0.001, plainS)).toFixed(2)}× the one without`,
    "- the check runs at most two statements per rule and 500 keys of a batch (the business rows by key; the rule's tasks by key, for keys with rows), never one per task",
    '- the machine was shared with other work while this ran: read the ratios, not the absolute figures',
  ].join('\n');
  updateSection(values.out, 'effect-check', body);
  log(`wrote ${values.out}`);
  console.log(body);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
