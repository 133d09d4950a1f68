#!/usr/bin/env node
/**
 * Bulk `compensate --action retry` on 300,000 failed tasks (issue acceptance 5): peak RSS, --rate
 * kept, interrupted by SIGINT and resumed without redoing a row — beside the raw baseline of the same
 * change done set-based in SQL (one UPDATE and one INSERT … SELECT of the audit rows, one transaction).
 *
 *   npm run build && node bench/compensate.js [--rows 300000] [--rate 400] [--interrupt-after 25]
 *
 * Writes its own section of bench/RESULTS.md. Uses the database taskrecon_bench_compensate on
 * 127.0.0.1 (dropped and rebuilt every run).
 */
import mysql from 'mysql2/promise';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { auditDdl, asyncTaskDdl } from '../dist/db/ddl.js';
import { mysqlDialect } from '../dist/db/engines/mysql/dialect.js';
import { machineFacts, updateSection } from './results.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUN_JS = join(ROOT, 'bin', 'run.js');
const DATABASE = 'taskrecon_bench_compensate';
const DSN = `mysql://root@127.0.0.1:3306/${DATABASE}`;
const TARGET_RSS_MB = 150;

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '300000' },
    rate: { type: 'string', default: '400' },
    'interrupt-after': { type: 'string', default: '25' },
    out: { type: 'string', default: join(ROOT, 'bench', 'RESULTS.md') },
  },
});
const ROWS = Number(values.rows);
const RATE = Number(values.rate);
const INTERRUPT_AFTER_S = Number(values['interrupt-after']);
const log = (m) => console.error(`[bench compensate ${new Date().toISOString().slice(11, 19)}] ${m}`);
const int = (n) => Math.round(n).toLocaleString('en-US');
/** A markdown table; the first row is the header. */
const table = ([head, ...rows]) =>
  [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`),
  ].join('\n');

async function admin() {
  return mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', multipleStatements: true });
}

async function build(sql) {
  await sql.query(
    `DROP DATABASE IF EXISTS ${DATABASE}; CREATE DATABASE ${DATABASE} CHARACTER SET utf8mb4; USE ${DATABASE}`,
  );
  for (const s of [...asyncTaskDdl(mysqlDialect), ...auditDdl(mysqlDialect)]) await sql.query(s);
  for (let from = 1; from <= ROWS; from += 100_000) {
    const to = Math.min(ROWS, from + 99_999);
    await sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
       SELECT ELT(1 + seq % 4, 'coupon', 'sms', 'points', 'refund'), CONCAT('order-', seq), CONCAT('ev-', seq),
              CONCAT('{"orderId": ', seq, ', "amount": ', seq % 997, '}'), 3, 7, NOW() - INTERVAL 1 DAY,
              CONCAT('HTTP 503 from downstream after 7 retries; request id ', MD5(seq)), NOW() - INTERVAL 2 DAY, NOW() - INTERVAL 1 DAY
         FROM seq_${from}_to_${to}`,
    );
  }
}

/** Spawns the CLI, polls its peak RSS (VmHWM), optionally sends SIGINT after `interruptMs`. */
function runCompensate(args, interruptMs) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [RUN_JS, 'compensate', ...args], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let peakKb = 0;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const poll = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peakKb = Math.max(peakKb, Number(m[1]));
      } catch {
        // ended
      }
    }, 50);
    const timer = interruptMs ? setTimeout(() => child.kill('SIGINT'), interruptMs) : undefined;
    child.on('close', (code) => {
      clearInterval(poll);
      if (timer) clearTimeout(timer);
      resolve({
        code,
        seconds: (performance.now() - started) / 1000,
        peakRssMb: peakKb / 1024,
        json: stdout ? JSON.parse(stdout) : undefined,
        stderr,
      });
    });
  });
}

async function count(sql, where) {
  const [rows] = await sql.query(`SELECT COUNT(*) AS n FROM ${DATABASE}.${where}`);
  return Number(rows[0].n);
}

async function main() {
  const sql = await admin();
  log(`building ${int(ROWS)} failed tasks`);
  await build(sql);

  log(`run 1: --rate ${RATE}/s, SIGINT after ${INTERRUPT_AFTER_S}s`);
  const first = await runCompensate(
    ['--db', DSN, '--action', 'retry', '--yes', '--json', '--rate', `${RATE}/s`, '--reason', 'bench'],
    INTERRUPT_AFTER_S * 1000,
  );
  const movedAfterFirst = await count(sql, 'async_task WHERE status = 0');
  log(
    `run 1: exit ${first.code}, applied ${first.json?.applied}, ${first.json?.durationMs} ms, peak RSS ${first.peakRssMb.toFixed(1)} MB`,
  );

  log('run 2: the same command again (resume), no rate limit');
  const second = await runCompensate(
    ['--db', DSN, '--action', 'retry', '--yes', '--json', '--reason', 'bench'],
    0,
  );
  log(
    `run 2: exit ${second.code}, applied ${second.json?.applied}, ${second.json?.durationMs} ms, peak RSS ${second.peakRssMb.toFixed(1)} MB`,
  );

  const pending = await count(sql, 'async_task WHERE status = 0 AND retry_count = 0');
  const audits = await count(sql, "taskrecon_audit WHERE action = 'retry'");
  const [dups] = await sql.query(
    `SELECT COUNT(*) AS n FROM (SELECT task_id FROM ${DATABASE}.taskrecon_audit GROUP BY task_id, from_status, to_status HAVING COUNT(*) > 1) d`,
  );
  const duplicates = Number(dups[0].n);

  log('baseline: the same change set-based in SQL (one transaction)');
  await sql.query(
    `USE ${DATABASE}; UPDATE async_task SET status = 3, retry_count = 7; TRUNCATE taskrecon_audit`,
  );
  const t0 = performance.now();
  await sql.query(
    `START TRANSACTION;
     INSERT INTO taskrecon_audit (operator, host, action, source, task_table, task_id, event_id, from_status, to_status, before_json, after_json, reason, run_id)
       SELECT 'bench', 'bench', 'retry', 'async-task', 'async_task', id, event_id, 'failed', 'pending',
              JSON_OBJECT('id', id, 'status', status, 'retry_count', retry_count, 'last_error', last_error, 'payload', payload),
              JSON_OBJECT('id', id, 'status', 0, 'retry_count', 0), 'bench', 'baseline'
         FROM async_task WHERE status = 3;
     UPDATE async_task SET status = 0, retry_count = 0, next_retry_time = NOW(), updated_at = NOW() WHERE status = 3;
     COMMIT`,
  );
  const baselineSeconds = (performance.now() - t0) / 1000;
  await sql.query(`DROP DATABASE ${DATABASE}`);
  await sql.end();

  const firstRate = first.json ? first.json.applied / (first.json.durationMs / 1000) : 0;
  const taskreconSeconds = (second.json?.durationMs ?? 0) / 1000;
  const peak = Math.max(first.peakRssMb, second.peakRssMb);
  const ok = (b) => (b ? '**met**' : '**missed**');
  const body = [
    '## compensate: bulk retry, interrupted and resumed',
    '',
    machineFacts({ rows: int(ROWS) }),
    '',
    table([
      ['run', 'rows changed', 'time (s)', 'rows/s', 'peak RSS (MB)', 'exit', 'notes'],
      [
        `1: \`--rate ${RATE}/s\`, SIGINT after ${INTERRUPT_AFTER_S} s`,
        int(first.json?.applied ?? 0),
        ((first.json?.durationMs ?? 0) / 1000).toFixed(1),
        int(firstRate),
        first.peakRssMb.toFixed(1),
        String(first.code),
        `interrupted: ${first.json?.interrupted}; rows moved in the table after it: ${int(movedAfterFirst)}`,
      ],
      [
        '2: same command again (resume), no rate',
        int(second.json?.applied ?? 0),
        taskreconSeconds.toFixed(1),
        int((second.json?.applied ?? 0) / Math.max(0.001, taskreconSeconds)),
        second.peakRssMb.toFixed(1),
        String(second.code),
        `matched ${int(second.json?.matched ?? 0)} (= the rows run 1 had not done)`,
      ],
      [
        'baseline: one UPDATE + one INSERT … SELECT (SQL, one transaction)',
        int(ROWS),
        baselineSeconds.toFixed(1),
        int(ROWS / baselineSeconds),
        'n/a',
        '0',
        'no per-row guard, lock or before-image',
      ],
    ]),
    '',
    `- peak RSS ${peak.toFixed(1)} MB, target < ${TARGET_RSS_MB} MB: ${ok(peak < TARGET_RSS_MB)}`,
    `- --rate ${RATE}/s kept in run 1: ${int(firstRate)} rows/s measured: ${ok(firstRate <= RATE * 1.02)}`,
    `- after both runs: ${int(pending)} of ${int(ROWS)} tasks pending with attempts reset; ${int(audits)} audit rows; ${duplicates} tasks with two audit rows for the same transition: ${ok(pending === ROWS && audits === ROWS && duplicates === 0)}`,
    `- unthrottled taskrecon vs the set-based baseline: ${(taskreconSeconds / Math.max(0.001, (baselineSeconds * (second.json?.applied ?? ROWS)) / ROWS)).toFixed(1)}× the time per row (taskrecon locks each batch, re-checks every row, keeps its whole before/after image)`,
  ].join('\n');
  updateSection(values.out, 'compensate', body);
  log(`wrote ${values.out}`);
  console.log(body);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
