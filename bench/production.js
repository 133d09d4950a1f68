#!/usr/bin/env node
// Over 300 lines: one benchmark run end to end (datasets, three measurements, the markdown section), read top to bottom.
/**
 * A production-shaped table: 5M rows of the classic task-table design, 97% success, with the
 * indexes `taskrecon doctor` recommends. In one run, interleaved, median of N:
 *   - one full-table `GROUP BY biz_type, status` through the primary key (the baseline),
 *   - `taskrecon scan --json` (the summary and the first rows of each list) and `taskrecon report --json`,
 *   - rows examined per statement (Handler_read_* of SHOW SESSION STATUS, before and after),
 *   - `scan --format ndjson --limit 0` against `mariadb --quick -N -B` on the same ~400k rows, warm
 *     (rows in the buffer pool) and cold (the buffer pool refilled with other pages first).
 *
 *   node bench/production.js [--engine mysql|postgres] [--rows 5000000] [--runs 3] [--out bench/RESULTS.md]
 *
 * Tables are generated once by bench/generate.js and kept between runs. `--engine postgres` runs
 * the same measurements on the local PostgreSQL (bench/production-postgres.js).
 */
import mysql from 'mysql2/promise';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { generate, mariadbArgs, SERVER } from './generate.js';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';
import { listStatements } from './statements.js';
import { openMysql } from '../dist/db/engines/mysql/db.js';
import { parseDsn } from '../dist/db/dsn.js';
import { bindSource } from '../dist/db/bind-source.js';
import { asyncTask } from '../dist/db/profiles/builtin.js';
import { scanSummary } from '../dist/verbs/scan/scan.js';
import { buildReport } from '../dist/verbs/report/report.js';
import { THRESHOLD_METRICS } from '../dist/core/thresholds.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUN_JS = join(ROOT, 'bin', 'run.js');
const DATABASE = 'taskrecon_bench';
const DB_URL = `mysql://root@127.0.0.1:3306/${DATABASE}`;
const TARGET = { report: 0.2, scan: 0.5, ndjson: 0.9, ndjsonPg: 0.8, rssMb: 150 };

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'mysql' },
    rows: { type: 'string', default: '5000000' },
    runs: { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const OUT = values.out ?? join(ROOT, 'bench', 'RESULTS.md');
const TABLE = ROWS === 5_000_000 ? 'async_task_prod_5m' : `async_task_prod_${ROWS}`;
/** The outage mix lists ~88% of its rows: 455k rows list ~400k. */
const NDJSON = { table: 'async_task_outage_455k', rows: 455_000, mix: 'outage' };
const DOCTOR_INDEXES = [
  ['idx_status_biz_type', '(`status`, `biz_type`, `next_retry_time`, `updated_at`)'],
  ['idx_created_at', '(`created_at`)'],
];

const log = (m) => console.error(`[production ${new Date().toISOString().slice(11, 19)}] ${m}`);
const fmt = (n, d = 2) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const int = (n) => Math.round(n).toLocaleString('en-US');
const pass = (ok) => (ok ? '**met**' : '**missed**');

/** Runs each of `runners` once per round, rotating which goes first; exit codes 0–2 are results, not failures. */
async function rounds(label, runners) {
  const series = Object.fromEntries(Object.keys(runners).map((k) => [k, []]));
  const names = Object.keys(runners);
  for (let i = 0; i < RUNS; i++) {
    const order = names.map((_, j) => names[(i + j) % names.length]);
    for (const name of order) {
      const run = await runners[name]();
      if (run.code > 2) throw new Error(`${label} ${name} exited ${run.code}: ${run.stderr.slice(0, 2000)}`);
      series[name].push(run);
      log(`${label} ${name} run ${i + 1}: ${fmt(run.seconds, 3)} s, ${fmt(run.peakRssMb, 1)} MB`);
    }
  }
  return series;
}

async function handlerReads(conn, sql) {
  const read = async () => {
    const [rows] = await conn.query("SHOW SESSION STATUS LIKE 'Handler_read%'");
    return Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]));
  };
  const before = await read();
  const started = performance.now();
  await conn.query(sql);
  const ms = performance.now() - started;
  const after = await read();
  const diff = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]));
  const total = Object.values(diff).reduce((a, b) => a + b, 0);
  return { ms, diff, total };
}

/** The statements scan's summary and report send, parameters inlined, recorded from the built code. */
async function commandStatements(db, source) {
  const recorded = [];
  const recorder = Object.create(db, {
    query: {
      value: async (sql, params = []) => {
        if (/^\s*SELECT\b/i.test(sql) && !/information_schema/i.test(sql))
          recorded.push(mysql.format(sql, params));
        return [];
      },
    },
  });
  const nowEpoch = await db.nowEpoch();
  const recordedSource = { ...source, db: recorder };
  await scanSummary(recordedSource, { nowEpoch, stuckAfterMs: 600_000, limit: 20 });
  const scan = recorded.splice(0);
  const thresholds = Object.fromEntries(THRESHOLD_METRICS.map((m) => [m, {}]));
  await buildReport(recordedSource, { nowEpoch, windowSeconds: 3600, stuckAfterMs: 600_000, thresholds });
  return { scan, report: recorded.splice(0) };
}

async function main() {
  await generate({ table: TABLE, rows: ROWS, mix: 'production', database: DATABASE, log });
  const conn = await mysql.createConnection({ ...SERVER, database: DATABASE });
  const [have] = await conn.query(`SHOW INDEX FROM \`${TABLE}\``);
  const columnsOf = (name) =>
    `(${have
      .filter((i) => i.Key_name === name)
      .sort((a, b) => a.Seq_in_index - b.Seq_in_index)
      .map((i) => `\`${i.Column_name}\``)
      .join(', ')})`;
  const stale = DOCTOR_INDEXES.filter(
    ([name, cols]) => have.some((i) => i.Key_name === name) && columnsOf(name) !== cols,
  );
  if (stale.length)
    await conn.query(`ALTER TABLE \`${TABLE}\` ${stale.map(([n]) => `DROP INDEX \`${n}\``).join(', ')}`);
  const missing = DOCTOR_INDEXES.filter(
    ([name]) => !have.some((i) => i.Key_name === name) || stale.some(([n]) => n === name),
  );
  if (missing.length) {
    log(`${TABLE}: adding doctor's indexes ${missing.map(([n]) => n).join(', ')}`);
    await conn.query(
      `ALTER TABLE \`${TABLE}\` ${missing.map(([n, cols]) => `ADD INDEX \`${n}\` ${cols}`).join(', ')}`,
    );
  }
  await conn.query(`ANALYZE TABLE \`${TABLE}\``);
  const [[facts]] = await conn.query('SELECT VERSION() AS v, @@innodb_buffer_pool_size AS bp');
  const baselineSql = `SELECT biz_type, status, COUNT(*) FROM \`${TABLE}\` FORCE INDEX (PRIMARY) GROUP BY biz_type, status`;
  const taskrecon = (args) => () =>
    measure(process.execPath, [RUN_JS, ...args, '--db', DB_URL, '--profile', 'async-task', '--table', TABLE]);

  log('warm-up');
  await measure('mariadb', mariadbArgs(DATABASE, baselineSql));
  const summary = await rounds('summary', {
    baseline: () => measure('mariadb', mariadbArgs(DATABASE, baselineSql)),
    scan: taskrecon(['scan', '--json', '--limit', '20']),
    report: taskrecon(['report', '--json']),
    startup: () => measure(process.execPath, [RUN_JS, '--version']),
  });
  const med = Object.fromEntries(
    Object.entries(summary).map(([k, s]) => [k, median(s.map((r) => r.seconds))]),
  );

  // Rows examined per statement.
  const db = await openMysql(parseDsn(DB_URL));
  const source = await bindSource(db, { ...asyncTask, table: TABLE }, 'bench');
  const statements = await commandStatements(db, source);
  await db.close();
  const examined = [];
  const b = await handlerReads(conn, baselineSql);
  examined.push({ command: 'baseline', statement: baselineSql, ...b });
  for (const [command, list] of Object.entries(statements))
    for (const sql of list) examined.push({ command, statement: sql, ...(await handlerReads(conn, sql)) });

  // ndjson: warm and cold against the raw client on the same rows.
  await generate({ ...NDJSON, database: DATABASE, log });
  const nowEpoch = Number((await conn.query('SELECT UNIX_TIMESTAMP() AS n'))[0][0].n);
  const lists = await listStatements(NDJSON.table, nowEpoch);
  const [counted] = await conn.query(
    lists
      .map((s) => s.replace(/^SELECT .*? FROM /s, 'SELECT COUNT(*) AS n FROM ').replace(/ ORDER BY .*$/s, ''))
      .join(' UNION ALL '),
  );
  const listed = counted.reduce((sum, r) => sum + Number(r.n), 0);
  const raw = async () =>
    measure('mariadb', mariadbArgs(DATABASE, (await listStatements(NDJSON.table, nowEpoch)).join(';\n')));
  const ours = () =>
    measure(process.execPath, [
      RUN_JS,
      'scan',
      '--db',
      DB_URL,
      '--profile',
      'async-task',
      '--table',
      NDJSON.table,
      '--limit',
      '0',
      '--format',
      'ndjson',
    ]);
  await raw(); // warm the buffer pool
  const warm = await rounds('ndjson warm', { raw, ours });
  // Cold: before each run, read the 5M-row table through its primary key, which refills the buffer pool with its pages.
  const evict = () =>
    conn.query(`SELECT COUNT(*), SUM(LENGTH(payload)) FROM \`${TABLE}\` FORCE INDEX (PRIMARY)`);
  const cold = await rounds('ndjson cold', {
    raw: async () => (await evict(), raw()),
    ours: async () => (await evict(), ours()),
  });
  await conn.end();

  const ratio = (ours, base) => ours / base;
  const nd = (series) => {
    const r = median(series.raw.map((x) => x.seconds));
    const o = median(series.ours.map((x) => x.seconds));
    return {
      raw: r,
      ours: o,
      ratio: r / o,
      rawRss: Math.max(...series.raw.map((x) => x.peakRssMb)),
      oursRss: Math.max(...series.ours.map((x) => x.peakRssMb)),
    };
  };
  const w = nd(warm);
  const c = nd(cold);
  const body = [
    '## Production primary: index-served scan and report, ndjson warm and cold',
    '',
    machineFacts({
      mariadb: facts.v,
      innodb_buffer_pool_size: `${Number(facts.bp) / 2 ** 20} MiB`,
      runs: RUNS,
      'peak RSS': rssMethod,
    }),
    '',
    `Table \`${TABLE}\`: ${int(ROWS)} rows of the classic task-table design, 97% success (\`bench/generate.js --mix production\`), ` +
      `with the reference indexes and doctor's \`idx_status_biz_type (status, biz_type, next_retry_time, updated_at)\` and \`idx_created_at (created_at)\`, after ANALYZE TABLE. ` +
      'Wall time of each command as a process (Node start-up included; `taskrecon --version` alone is shown for it), interleaved with the baseline, median of the runs.',
    '',
    markdownTable([
      {
        what: 'baseline: `GROUP BY biz_type, status` FORCE INDEX (PRIMARY)',
        'median s': fmt(med.baseline, 3),
        'ratio to baseline': '1.00×',
        target: '',
        verdict: '',
      },
      {
        what: '`taskrecon scan --json --limit 20`',
        'median s': fmt(med.scan, 3),
        'ratio to baseline': `${fmt(ratio(med.scan, med.baseline), 3)}×`,
        target: `≤ ${TARGET.scan}×`,
        verdict: pass(med.scan / med.baseline <= TARGET.scan),
      },
      {
        what: '`taskrecon report --json`',
        'median s': fmt(med.report, 3),
        'ratio to baseline': `${fmt(ratio(med.report, med.baseline), 3)}×`,
        target: `≤ ${TARGET.report}×`,
        verdict: pass(med.report / med.baseline <= TARGET.report),
      },
      {
        what: '`taskrecon --version` (Node start-up only)',
        'median s': fmt(med.startup, 3),
        'ratio to baseline': `${fmt(ratio(med.startup, med.baseline), 3)}×`,
        target: '',
        verdict: '',
      },
    ]),
    '',
    'Rows examined per statement (sum of the `Handler_read_*` counters of SHOW SESSION STATUS around the statement, run alone on one connection; time of that single run):',
    '',
    markdownTable(
      examined.map((e) => ({
        command: e.command,
        statement: `\`${e.statement.replace(/\s+/g, ' ').slice(0, 160)}${e.statement.length > 160 ? '…' : ''}\``,
        'rows examined': int(e.total),
        'read_next / read_key / read_rnd_next': `${int(e.diff.Handler_read_next ?? 0)} / ${int(e.diff.Handler_read_key ?? 0)} / ${int(e.diff.Handler_read_rnd_next ?? 0)}`,
        ms: fmt(e.ms, 0),
      })),
    ),
    '',
    `\`scan --format ndjson --limit 0\` against \`mariadb --quick -N -B\` running the same list statements, both to /dev/null, on \`${NDJSON.table}\` (${int(NDJSON.rows)} rows, ${int(listed)} listed). ` +
      'Warm: the rows already in the buffer pool (one raw run first). Cold: before each run a full read of the 5M-row table through its primary key refills the buffer pool with other pages (the OS page cache is not dropped: the server reads from memory, not the disk).',
    '',
    markdownTable([
      {
        run: 'warm',
        'mariadb s': fmt(w.raw, 3),
        'taskrecon s': fmt(w.ours, 3),
        'rows/s ratio (taskrecon ÷ mariadb)': `${fmt(w.ratio, 3)}×`,
        'taskrecon peak RSS MB': fmt(w.oursRss, 1),
        'mariadb peak RSS MB': fmt(w.rawRss, 1),
      },
      {
        run: 'cold',
        'mariadb s': fmt(c.raw, 3),
        'taskrecon s': fmt(c.ours, 3),
        'rows/s ratio (taskrecon ÷ mariadb)': `${fmt(c.ratio, 3)}×`,
        'taskrecon peak RSS MB': fmt(c.oursRss, 1),
        'mariadb peak RSS MB': fmt(c.rawRss, 1),
      },
    ]),
    '',
    `- ndjson warm ≥ ${TARGET.ndjson}×: ${fmt(w.ratio, 3)}× — ${pass(w.ratio >= TARGET.ndjson)}; peak RSS < ${TARGET.rssMb} MB warm and cold: ${fmt(Math.max(w.oursRss, c.oursRss), 1)} MB — ${pass(Math.max(w.oursRss, c.oursRss) < TARGET.rssMb)}.`,
    '',
    'Re-run: `npm run build:dev && node bench/production.js` (the tables are kept; a first build of the 5M-row table takes a few minutes).',
  ].join('\n');
  updateSection(OUT, 'production', body);
  log(`wrote the production section of ${OUT}`);
}

const run =
  values.engine === 'postgres'
    ? async () => {
        const { runPostgres } = await import('./production-postgres.js');
        await runPostgres({ ROWS, RUNS, OUT, TARGET, rounds, log, fmt, int, pass });
      }
    : main;
if (values.engine !== 'mysql' && values.engine !== 'postgres')
  throw new Error(`--engine mysql or postgres, not ${values.engine}`);
run().catch((error) => {
  console.error(error);
  process.exit(1);
});
