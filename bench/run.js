#!/usr/bin/env node
/**
 * taskrecon's benchmarks (the performance targets), each beside its raw baseline in the same run, medians of N runs
 * (3 by default) with baseline and taskrecon interleaved, peak RSS of each child, written to
 * bench/RESULTS.md (only this script's sections; other scripts keep theirs).
 *
 *   npm run build && node bench/run.js                # full: 1M-row NDJSON, 10M-row summary, start-up
 *   node bench/run.js --quick                         # smoke: 200k / 1M rows, to bench/out/RESULTS.quick.md
 *   node bench/run.js --only ndjson,summary,startup --runs 5 --out FILE
 *
 * Datasets are built by bench/generate.js on first use (database taskrecon_bench on 127.0.0.1) and
 * reused afterwards. The full 10M-row table takes several minutes to build.
 */
import mysql from 'mysql2/promise';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generate, mariadbArgs, SERVER } from './generate.js';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';
import { listStatements, summaryStatements } from './statements.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATABASE = 'taskrecon_bench';
const DB_URL = `mysql://root@127.0.0.1:3306/${DATABASE}`;
const RUN_JS = join(ROOT, 'bin', 'run.js');

const TARGET = { ndjsonRatio: 0.9, rssMb: 150, summaryRatio: 1.2, startupMs: 300 };

/** The outage mix lists ~88% of its rows (due + stuck + failed), so these tables list ~1M and ~250k rows. */
const PLANS = {
  full: {
    ndjson: [
      { table: 'async_task_outage_1m', rows: 1_140_000, mix: 'outage' },
      { table: 'async_task_outage_250k', rows: 285_000, mix: 'outage' },
    ],
    summary: { table: 'async_task_10m', rows: 10_000_000, mix: 'realistic' },
  },
  quick: {
    ndjson: [
      { table: 'async_task_outage_200k', rows: 228_000, mix: 'outage' },
      { table: 'async_task_outage_50k', rows: 57_000, mix: 'outage' },
    ],
    summary: { table: 'async_task_1m', rows: 1_000_000, mix: 'realistic' },
  },
};

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string', default: 'ndjson,summary,startup' },
    runs: { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});
const plan = values.quick ? PLANS.quick : PLANS.full;
const runs = Number(values.runs);
const only = new Set(values.only.split(','));
const outFile =
  values.out ??
  (values.quick ? join(ROOT, 'bench', 'out', 'RESULTS.quick.md') : join(ROOT, 'bench', 'RESULTS.md'));
const log = (message) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

const fmt = (n, digits = 2) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const int = (n) => Math.round(n).toLocaleString('en-US');
const pass = (ok) => (ok ? '**met**' : '**missed**');

function taskreconScanArgs(table, extra) {
  return [RUN_JS, 'scan', '--db', DB_URL, '--profile', 'async-task', '--table', table, ...extra];
}

/** When a section was measured and how busy the shared machine was then. */
function measuredAt() {
  const load = os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' / ');
  return `Measured ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, load average at start ${load} (1/5/15 min).`;
}

async function nowEpoch(conn) {
  const [rows] = await conn.query('SELECT UNIX_TIMESTAMP() AS now');
  return Number(rows[0].now);
}

/** Runs `a` and `b` interleaved `runs` times (alternating which goes first); returns both series. */
async function pair(label, a, b) {
  const series = { a: [], b: [] };
  for (let i = 0; i < runs; i++) {
    const order = i % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
    for (const which of order) {
      const run = await (which === 'a' ? a() : b());
      if (run.code !== 0)
        throw new Error(
          `${label} (${which === 'a' ? 'baseline' : 'taskrecon'}) exited ${run.code}: ${run.stderr.slice(0, 2000)}`,
        );
      series[which].push(run);
      log(
        `${label} ${which === 'a' ? 'baseline ' : 'taskrecon'} run ${i + 1}: ${fmt(run.seconds, 3)} s, ${fmt(run.peakRssMb, 1)} MB`,
      );
    }
  }
  return series;
}

async function explain(conn, sql) {
  const [rows] = await conn.query(`EXPLAIN ${sql}`);
  return rows.map((r) => ({
    table: r.table,
    type: r.type,
    possible_keys: r.possible_keys,
    key: r.key,
    key_len: r.key_len,
    rows: r.rows,
    Extra: r.Extra,
  }));
}

async function serverFacts(conn) {
  const [rows] = await conn.query('SELECT VERSION() AS v, @@innodb_buffer_pool_size AS bp');
  return { mariadb: rows[0].v, innodb_buffer_pool_size: `${Number(rows[0].bp) / 2 ** 20} MiB` };
}

async function benchNdjson(conn) {
  const started = measuredAt();
  const results = [];
  for (const dataset of plan.ndjson) {
    await generate({ ...dataset, database: DATABASE, log });
    const { table } = dataset;
    const statements = await listStatements(table, await nowEpoch(conn));
    const [counted] = await conn.query(
      statements
        .map((s) =>
          s.replace(/^SELECT .*? FROM /s, 'SELECT COUNT(*) AS n FROM ').replace(/ ORDER BY .*$/s, ''),
        )
        .join(' UNION ALL '),
    );
    const listed = counted.reduce((sum, r) => sum + Number(r.n), 0);
    log(`ndjson ${table}: ${int(listed)} listed rows; warming up`);
    await measure('mariadb', mariadbArgs(DATABASE, statements.join(';\n')));
    let taskreconRows = 0;
    const series = await pair(
      `ndjson ${table}`,
      async () =>
        measure(
          'mariadb',
          mariadbArgs(DATABASE, (await listStatements(table, await nowEpoch(conn))).join(';\n')),
        ),
      async () => {
        const run = await measure(
          process.execPath,
          taskreconScanArgs(table, ['--limit', '0', '--format', 'ndjson']),
        );
        const m = /([\d,]+) rows from/.exec(run.stderr);
        taskreconRows = m ? Number(m[1].replace(/,/g, '')) : 0;
        return run;
      },
    );
    const raw = median(series.a.map((r) => r.seconds));
    const ours = median(series.b.map((r) => r.seconds));
    results.push({
      table,
      tableRows: dataset.rows,
      listed,
      taskreconRows,
      raw,
      ours,
      rawRss: Math.max(...series.a.map((r) => r.peakRssMb)),
      oursRss: Math.max(...series.b.map((r) => r.peakRssMb)),
      runs: series,
      statements,
      explain: await explain(conn, statements[2]),
    });
  }
  const big = results[0];
  const ratio = big.raw / big.ours;
  const maxRss = Math.max(...results.map((r) => r.oursRss));
  const body = [
    '## scan --format ndjson vs mariadb --quick -N -B',
    '',
    started,
    '',
    `\`taskrecon scan --limit 0 --format ndjson\` (all three lists: stuck, due, failed) against \`mariadb --quick -N -B -e "<the same list statements, unpaged>"\`, both to /dev/null. ` +
      'Tables of the "outage" mix (bench/generate.js), where ~88% of the rows are listed. taskrecon pages each list in index order (keyset, cutoff fixed once); ' +
      `the baseline runs each list as one query. Wall time from spawn to exit, median of ${runs}, runs interleaved.`,
    '',
    markdownTable(
      results.map((r) => ({
        table: r.table,
        'table rows': int(r.tableRows),
        'rows listed': int(r.listed),
        'taskrecon lines': int(r.taskreconRows),
        'mariadb s': fmt(r.raw, 3),
        'taskrecon s': fmt(r.ours, 3),
        'mariadb rows/s': int(r.listed / r.raw),
        'taskrecon rows/s': int(r.taskreconRows / r.ours),
        'ratio (taskrecon/raw rows/s)': fmt(r.taskreconRows / r.ours / (r.listed / r.raw), 3),
        'mariadb CPU s': fmt(median(r.runs.a.map((x) => x.cpuSeconds)), 2),
        'taskrecon CPU s': fmt(median(r.runs.b.map((x) => x.cpuSeconds)), 2),
        'taskrecon peak RSS MB': fmt(r.oursRss, 1),
        'mariadb peak RSS MB': fmt(r.rawRss, 1),
      })),
    ),
    '',
    `- Throughput target ≥ ${TARGET.ndjsonRatio}× of the raw client on ${int(big.listed)} rows: ${fmt(ratio, 3)}× — ${pass(ratio >= TARGET.ndjsonRatio)}.`,
    `- Peak RSS target < ${TARGET.rssMb} MB at any row count: ${results.map((r) => `${fmt(r.oursRss, 1)} MB at ${int(r.listed)} rows`).join(', ')} — ${pass(maxRss < TARGET.rssMb)}.`,
    `- CPU time (user + system, start-up included): taskrecon used ${results.map((r) => `${fmt(median(r.runs.b.map((x) => x.cpuSeconds)) / median(r.runs.a.map((x) => x.cpuSeconds)), 2)}× the raw client's on ${r.table}`).join(', ')}. ` +
      'Where the server is the bottleneck (a table larger than the buffer pool, read in index order) both sides wait on it and the ratio is near 1; ' +
      "where the rows come from memory the client's own cost shows, so a smaller table gives a lower ratio.",
    `- Ratio of each interleaved pair (raw s ÷ taskrecon s, same rows): ${results.map((r) => `${r.table}: ${r.runs.a.map((x, i) => fmt(x.seconds / r.runs.b[i].seconds, 2)).join(' / ')}`).join('; ')}.`,
    `- Every run (s): ${results.map((r) => `${r.table}: mariadb ${r.runs.a.map((x) => fmt(x.seconds, 3)).join(' / ')}; taskrecon ${r.runs.b.map((x) => fmt(x.seconds, 3)).join(' / ')}`).join('; ')}.`,
    '',
    'The statements (as run by the baseline; taskrecon adds `LIMIT <page>` and a keyset predicate per page):',
    '',
    '```sql',
    ...big.statements.map((s) => `${s};`),
    '```',
    '',
    'EXPLAIN of the due list:',
    '',
    markdownTable(big.explain),
  ].join('\n');
  return { body, ok: ratio >= TARGET.ndjsonRatio && maxRss < TARGET.rssMb };
}

async function benchSummary(conn) {
  const started = measuredAt();
  const dataset = plan.summary;
  await generate({ ...dataset, database: DATABASE, log });
  const { table } = dataset;
  const statements = await summaryStatements(table, await nowEpoch(conn));
  log(`summary ${table}: warming up`);
  await measure('mariadb', mariadbArgs(DATABASE, statements.join(';\n')));
  const series = await pair(
    `summary ${table}`,
    async () =>
      measure(
        'mariadb',
        mariadbArgs(DATABASE, (await summaryStatements(table, await nowEpoch(conn))).join(';\n')),
      ),
    () => measure(process.execPath, taskreconScanArgs(table, ['--json', '--limit', '1'])),
  );
  // taskrecon runs the three statements at once on its pool: also time them as three raw clients at once.
  const parallel = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const each = await Promise.all(
      (await summaryStatements(table, await nowEpoch(conn))).map((s) =>
        measure('mariadb', mariadbArgs(DATABASE, s)),
      ),
    );
    parallel.push((performance.now() - started) / 1000);
    log(
      `summary ${table} baseline, 3 clients at once, run ${i + 1}: ${fmt(parallel[i], 3)} s (${each.map((e) => fmt(e.seconds, 1)).join(' / ')})`,
    );
  }
  const raw = median(series.a.map((r) => r.seconds));
  const rawParallel = median(parallel);
  const ours = median(series.b.map((r) => r.seconds));
  const ratio = ours / raw;
  const explains = [];
  for (const s of statements) explains.push({ sql: s, plan: await explain(conn, s) });
  const body = [
    `## scan summary on ${int(dataset.rows)} rows vs the raw aggregate SQL`,
    '',
    started,
    '',
    `\`taskrecon scan --json --limit 1\` (the summary: counts by biz type and status, due and stuck with the oldest of each, plus the first row of each list) ` +
      `against \`mariadb -N -B -e "<the three summary statements>"\`, run one after another. Table of the "realistic" mix. Median of ${runs}, runs interleaved.`,
    '',
    markdownTable([
      {
        table,
        rows: int(dataset.rows),
        'raw SQL s (one after another)': fmt(raw, 3),
        'raw SQL s (3 clients at once)': fmt(rawParallel, 3),
        'taskrecon s': fmt(ours, 3),
        'ratio (taskrecon/raw time)': fmt(ratio, 3),
        'ratio vs 3 clients at once': fmt(ours / rawParallel, 3),
        'raw client CPU s': fmt(median(series.a.map((r) => r.cpuSeconds)), 2),
        'taskrecon CPU s': fmt(median(series.b.map((r) => r.cpuSeconds)), 2),
        'taskrecon peak RSS MB': fmt(Math.max(...series.b.map((r) => r.peakRssMb)), 1),
      },
    ]),
    '',
    `- Target ≤ ${TARGET.summaryRatio}× the raw SQL's time: ${fmt(ratio, 3)}× — ${pass(ratio <= TARGET.summaryRatio)}. ` +
      `taskrecon runs the three statements at once on its connection pool; against the same three statements run by three raw clients at once it takes ${fmt(ours / rawParallel, 3)}× (runs: ${parallel.map((x) => fmt(x, 3)).join(' / ')} s).`,
    '- The count by biz type and status reads the whole table (no index covers biz_type and status together in the seed DDL); due and stuck read ranges of `idx_status_next_retry`.',
    `- Ratio of each interleaved pair (taskrecon s ÷ raw s): ${series.a.map((x, i) => fmt(series.b[i].seconds / x.seconds, 2)).join(' / ')}.`,
    `- Every run (s): raw ${series.a.map((x) => fmt(x.seconds, 3)).join(' / ')}; taskrecon ${series.b.map((x) => fmt(x.seconds, 3)).join(' / ')}.`,
    '',
    ...explains.flatMap((e) => ['```sql', `${e.sql};`, '```', '', markdownTable(e.plan), '']),
  ].join('\n');
  return { body, ok: ratio <= TARGET.summaryRatio };
}

async function benchStartup() {
  const started = measuredAt();
  const n = Math.max(runs, 11);
  const saved = runs;
  const series = { a: [], b: [] };
  for (let i = 0; i < n; i++) {
    series.a.push(await measure(process.execPath, ['-e', '0']));
    series.b.push(await measure(process.execPath, [RUN_JS, '--help']));
  }
  void saved;
  const base = median(series.a.map((r) => r.seconds)) * 1000;
  const help = median(series.b.map((r) => r.seconds)) * 1000;
  log(`startup: node -e 0 ${fmt(base, 0)} ms, taskrecon --help ${fmt(help, 0)} ms`);
  const body = [
    '## taskrecon --help start-up vs node -e 0',
    '',
    started,
    '',
    `Median of ${n}, interleaved, wall time from spawn to exit; CPU is user + system time of the child (much less sensitive to the load of a shared machine than wall time).`,
    '',
    markdownTable([
      {
        'node -e 0 ms': fmt(base, 0),
        'taskrecon --help ms': fmt(help, 0),
        'taskrecon − node ms': fmt(help - base, 0),
        'node -e 0 CPU ms': fmt(median(series.a.map((r) => r.cpuSeconds)) * 1000, 0),
        'taskrecon --help CPU ms': fmt(median(series.b.map((r) => r.cpuSeconds)) * 1000, 0),
        'taskrecon --help peak RSS MB': fmt(median(series.b.map((r) => r.peakRssMb)), 1),
      },
    ]),
    '',
    `- Target ≤ ${TARGET.startupMs} ms median: ${fmt(help, 0)} ms — ${pass(help <= TARGET.startupMs)}.`,
    `- Every run (ms): node ${series.a.map((x) => fmt(x.seconds * 1000, 0)).join(' / ')}; taskrecon ${series.b.map((x) => fmt(x.seconds * 1000, 0)).join(' / ')}.`,
  ].join('\n');
  return { body, ok: help <= TARGET.startupMs };
}

function intro(facts) {
  return [
    'Generated by `npm run bench` (bench/run.js) and the scripts beside it; every number below was measured on the machine described here, ' +
      'each benchmark beside its raw baseline in the same run. Ratios compare medians. Peak RSS: ' +
      `${rssMethod}.`,
    '',
    facts,
    '',
    'The 2 cores and the MariaDB server are shared with other work (test suites, other benchmarks) while these run, so single runs ' +
      'vary by tens of percent; the baseline and taskrecon runs are interleaved so both see the same load. Datasets are built by ' +
      '`node bench/generate.js` (the `async_task` DDL of the classic task-table design, the exact statements of `taskrecon init`; INSERT … SELECT from the ' +
      'SEQUENCE engine, secondary indexes built after the load) in database `taskrecon_bench`. Each section says which table it used.',
    '',
    'Re-run: `npm run build && npm run bench` (full, ~15 min with a fresh 10M-row build) or `node bench/run.js --quick` (smoke, ~1 min). ' +
      'Scripts for other commands write their own `<!-- bench:NAME:begin/end -->` sections with `updateSection()` of `bench/results.js`.',
  ].join('\n');
}

async function main() {
  if (!existsSync(join(ROOT, 'dist', 'commands', 'scan.js')))
    throw new Error('dist/ is missing: run `npm run build` first');
  mkdirSync(dirname(outFile), { recursive: true });
  const conn = await mysql.createConnection({ ...SERVER, database: DATABASE });
  const mariadbClient = execFileSync('mariadb', ['--version'], { encoding: 'utf8' }).trim();
  const facts = machineFacts({
    ...(await serverFacts(conn)),
    'raw client': mariadbClient,
    mode: values.quick ? 'quick (smoke sizes)' : 'full',
  });
  const summaryLines = [];
  try {
    updateSection(outFile, 'intro', intro(facts));
    if (only.has('startup')) {
      const r = await benchStartup();
      updateSection(outFile, 'startup', r.body);
      summaryLines.push(`startup ${r.ok ? 'met' : 'MISSED'}`);
    }
    if (only.has('ndjson')) {
      const r = await benchNdjson(conn);
      updateSection(outFile, 'scan-ndjson', r.body);
      summaryLines.push(`ndjson ${r.ok ? 'met' : 'MISSED'}`);
    }
    if (only.has('summary')) {
      const r = await benchSummary(conn);
      updateSection(outFile, 'scan-summary', r.body);
      summaryLines.push(`summary ${r.ok ? 'met' : 'MISSED'}`);
    }
  } finally {
    await conn.end();
  }
  log(
    `${summaryLines.join(', ')}; load average now ${os
      .loadavg()
      .map((n) => n.toFixed(2))
      .join(' / ')}; written to ${outFile}`,
  );
}

main().catch((error) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
