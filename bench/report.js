#!/usr/bin/env node
/**
 * `taskrecon report` on a large async_task table beside the raw aggregate SQL (the performance
 * target: report ≤ 1.5× the raw aggregate's time), medians of N interleaved runs, peak RSS,
 * written to its own section of bench/RESULTS.md.
 *
 *   npm run build && node bench/report.js                      # 10M rows (bench/generate.js builds it once)
 *   node bench/report.js --table async_task_outage_200k --rows 228000 --mix outage --runs 1 --out bench/out/report.md
 *
 * The generated rows' created_at end when the table was built, so the window is sized to hold the
 * last day of generated rows, whatever the time now (about 1/14 of the table: a heavy p95).
 * Baselines, each one `mariadb --quick -N -B` process:
 *   A. the raw aggregate as one would write it: one GROUP BY over the window (created, succeeded,
 *      failed, avg latency). MariaDB walks idx_biz for the GROUP BY, with a row lookup per entry;
 *   A'. the same with IGNORE INDEX (idx_biz): one sequential scan, the fastest plan for it;
 *   B'. A' plus the as-of-now statements a hand-written report also needs (due with oldest, stuck, failed open).
 * taskrecon computes more than A (p95 per biz type and overall, samples of failing biz types).
 */
import mysql from 'mysql2/promise';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generate, mariadbArgs, SERVER } from './generate.js';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATABASE = 'taskrecon_bench';
const DB_URL = `mysql://root@127.0.0.1:3306/${DATABASE}`;
const RUN_JS = join(ROOT, 'bin', 'run.js');
const TARGET_RATIO = 1.5;

const { values } = parseArgs({
  options: {
    table: { type: 'string', default: 'async_task_10m' },
    rows: { type: 'string', default: '10000000' },
    mix: { type: 'string', default: 'realistic' },
    runs: { type: 'string', default: '3' },
    out: { type: 'string', default: join(ROOT, 'bench', 'RESULTS.md') },
  },
});
const runs = Number(values.runs);
const log = (message) => console.error(`[bench report ${new Date().toISOString().slice(11, 19)}] ${message}`);
const fmt = (n, digits = 2) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function mariadb(sql) {
  return measure('mariadb', mariadbArgs(DATABASE, sql));
}

/** Baseline A: the window aggregate alone; A' (`sequential`) without the index MariaDB picks for the GROUP BY. */
function aggregateSql(table, since, sequential = false) {
  return `SELECT biz_type, COUNT(*), SUM(status = 2), SUM(status = 3),
  AVG(CASE WHEN status = 2 THEN TIMESTAMPDIFF(SECOND, created_at, updated_at) END)
  FROM ${table}${sequential ? ' IGNORE INDEX (idx_biz)' : ''} WHERE created_at >= FROM_UNIXTIME(${since}) GROUP BY biz_type`;
}

/** The as-of-now statements of baseline B (the same predicates as scan's). */
function nowSql(table, now) {
  return [
    `SELECT biz_type, COUNT(*), MIN(next_retry_time) FROM ${table} WHERE status = 0 AND next_retry_time <= FROM_UNIXTIME(${now}) GROUP BY biz_type`,
    `SELECT biz_type, COUNT(*) FROM ${table} WHERE status = 1 AND updated_at <= FROM_UNIXTIME(${now - 600}) GROUP BY biz_type`,
    `SELECT biz_type, COUNT(*) FROM ${table} WHERE status = 3 GROUP BY biz_type`,
  ];
}

async function main() {
  const rows = Number(values.rows);
  const table = values.table;
  await generate({ rows, table, database: DATABASE, mix: values.mix, log });
  const conn = await mysql.createConnection({ ...SERVER, database: DATABASE });
  const [[meta]] = await conn.query(
    'SELECT UNIX_TIMESTAMP(built_at) AS built, UNIX_TIMESTAMP() AS now FROM bench_dataset WHERE table_name = ?',
    [table],
  );
  const windowSeconds = Number(meta.now) - Number(meta.built) + 86_400;
  const [[inWindow]] = await conn.query(
    `SELECT COUNT(*) AS n FROM ${table} WHERE created_at >= FROM_UNIXTIME(?)`,
    [Number(meta.now) - windowSeconds],
  );
  log(`${table}: window ${windowSeconds} s holds ${Number(inWindow.n).toLocaleString('en-US')} rows`);
  const facts = machineFacts({ 'mariadb server': (await conn.query('SELECT VERSION() AS v'))[0][0].v });

  const series = { a: [], a2: [], b: [], report: [] };
  const outFile = join(ROOT, 'bench', 'out', 'report.json');
  for (let i = 0; i < runs; i++) {
    const order = [
      ['a', 'a2', 'b', 'report'],
      ['report', 'a', 'a2', 'b'],
      ['b', 'report', 'a', 'a2'],
    ][i % 3];
    for (const which of order) {
      const [[clock]] = await conn.query('SELECT UNIX_TIMESTAMP() AS now');
      const now = Number(clock.now);
      let run;
      if (which === 'a') run = await mariadb(aggregateSql(table, now - windowSeconds));
      else if (which === 'a2') run = await mariadb(aggregateSql(table, now - windowSeconds, true));
      else if (which === 'b')
        run = await mariadb(
          [aggregateSql(table, now - windowSeconds, true), ...nowSql(table, now)].join(';\n'),
        );
      else {
        const args = [
          RUN_JS,
          'report',
          '--db',
          DB_URL,
          '--profile',
          'async-task',
          '--table',
          table,
          '--window',
          `${windowSeconds}s`,
          '--format',
          'json',
        ];
        run = await measure(process.execPath, args, { stdout: outFile });
        if (run.code > 2) throw new Error(`report exited ${run.code}: ${run.stderr.slice(0, 2000)}`);
      }
      if (run.code > 2 || (which !== 'report' && run.code !== 0))
        throw new Error(`${which} exited ${run.code}: ${run.stderr.slice(0, 2000)}`);
      series[which].push(run);
      log(`${which} run ${i + 1}: ${fmt(run.seconds, 3)} s, ${fmt(run.peakRssMb, 1)} MB`);
    }
  }
  const report = JSON.parse(readFileSync(outFile, 'utf8'));
  // Cross-check the p95 against MariaDB's own PERCENTILE_DISC (the nearest rank too), on the last run's window.
  const since = Date.parse(report.window.since) / 1000;
  const [[disc]] = await conn.query(
    `SELECT DISTINCT PERCENTILE_DISC(0.95) WITHIN GROUP (ORDER BY lat) OVER () AS p95 FROM
       (SELECT TIMESTAMPDIFF(SECOND, created_at, updated_at) AS lat FROM ${table} WHERE status = 2 AND created_at >= FROM_UNIXTIME(?) AND created_at <= FROM_UNIXTIME(?)) w`,
    [since, Date.parse(report.window.until) / 1000],
  );
  await conn.end();

  const a = median(series.a.map((r) => r.seconds));
  const a2 = median(series.a2.map((r) => r.seconds));
  const b = median(series.b.map((r) => r.seconds));
  const ours = median(series.report.map((r) => r.seconds));
  const rss = Math.max(...series.report.map((r) => r.peakRssMb));
  const body = [
    '## report vs the raw aggregate SQL',
    '',
    `\`taskrecon report --format json --window ${windowSeconds}s\` on \`${table}\` (${rows.toLocaleString('en-US')} rows, ${values.mix} mix; the window holds ` +
      `${Number(inWindow.n).toLocaleString('en-US')} rows: the last day of generated data) beside \`mariadb --quick -N -B\` running ` +
      '(A) the raw aggregate over the window as one would write it — one GROUP BY for created, succeeded, failed and average latency; MariaDB ' +
      "serves the GROUP BY by walking idx_biz with a row lookup per entry — (A') the same with `IGNORE INDEX (idx_biz)`, one sequential scan, " +
      "and (B') A' plus the as-of-now statements (due with the oldest, stuck, failed open). taskrecon's window statement groups over a derived " +
      'table, so it reads the table sequentially too; it also computes p95 per biz type and overall (window functions over the same scan) ' +
      `and a sample of each failing biz type. Wall time from spawn to exit, median of ${runs}, runs interleaved in rotating order. Peak RSS by ${rssMethod}.`,
    '',
    markdownTable([
      {
        what: 'A. raw aggregate (mariadb)',
        'median s': fmt(a, 3),
        runs: series.a.map((r) => fmt(r.seconds, 2)).join(', '),
      },
      {
        what: "A'. raw aggregate, sequential plan (mariadb)",
        'median s': fmt(a2, 3),
        runs: series.a2.map((r) => fmt(r.seconds, 2)).join(', '),
      },
      {
        what: "B'. A' + as-of-now (mariadb)",
        'median s': fmt(b, 3),
        runs: series.b.map((r) => fmt(r.seconds, 2)).join(', '),
      },
      {
        what: 'taskrecon report',
        'median s': fmt(ours, 3),
        runs: series.report.map((r) => fmt(r.seconds, 2)).join(', '),
      },
    ]),
    '',
    `- report ÷ A (target ≤ ${TARGET_RATIO}×): **${fmt(ours / a, 2)}×** — ${ours / a <= TARGET_RATIO ? '**met**' : '**missed**'}`,
    `- report ÷ A' (the best plan of the raw aggregate): ${fmt(ours / a2, 2)}× — ${ours / a2 <= TARGET_RATIO ? 'within' : 'over'} ${TARGET_RATIO}×`,
    `- report ÷ B': ${fmt(ours / b, 2)}×`,
    `- taskrecon peak RSS: ${fmt(rss, 1)} MB (the window is aggregated in the database; no row of it reaches Node)`,
    `- p95 check: report says ${report.metrics.latencyP95Seconds} s overall; MariaDB's PERCENTILE_DISC(0.95) over the same window says ${disc.p95} s` +
      ` — ${Number(disc.p95) === report.metrics.latencyP95Seconds ? 'equal' : '**different**'}`,
    `- report's numbers on the last run: created ${report.metrics.created}, failed ${report.metrics.failed}, failure rate ${(report.metrics.failureRate * 100).toFixed(2)}%, ` +
      `due ${report.metrics.due}, stuck ${report.metrics.stuck}, failed open ${report.metrics.failedOpen}; status ${report.status}`,
    '',
    "Reading it: the raw aggregate as written (A) is slow because MariaDB serves its GROUP BY from idx_biz with a row lookup per entry; taskrecon's " +
      "window statement groups over a derived table and reads the table sequentially, like A'. What report adds over A' is the as-of-now part " +
      "(B' − A'): due, stuck and failed open read the (status, next_retry_time) index with a row lookup per entry for the biz type, which is " +
      'slow with a cold 128 MiB buffer pool and O_DIRECT, and which report runs in parallel with the window scan. Against the raw SQL that ' +
      "computes the same numbers (B') report is faster. With an index on created_at the window becomes a range read (see README).",
    '',
    'Machine:',
    '',
    facts,
  ].join('\n');
  updateSection(values.out, 'report', body);
  log(`wrote the report section of ${values.out}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
