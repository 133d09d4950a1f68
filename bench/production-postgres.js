/**
 * The PostgreSQL path of bench/production.js (`--engine postgres`): the same production-shaped
 * table (5M rows, 97% success, `bench/generate-postgres.js`) with the indexes `taskrecon doctor`
 * recommends on PostgreSQL (their CREATE INDEX taken from doctor's own code), VACUUM (ANALYZE)d.
 * Interleaved, median of N:
 *   - one full `SELECT biz_type, status, COUNT(*) … GROUP BY biz_type, status` by psql (the baseline),
 *   - `taskrecon scan --json --limit 20` and `taskrecon report --json`,
 *   - each statement they send, under EXPLAIN (ANALYZE, BUFFERS): time, plan, heap fetches,
 *   - `scan --format ndjson --limit 0` against psql streaming the same list statements with
 *     `COPY (…) TO STDOUT`, warm and with shared buffers refilled by other pages first.
 * Writes the section `production-postgres` of RESULTS.md.
 */
import pg from 'pg';
import { join } from 'node:path';
import { generatePostgres, PG_SERVER } from './generate-postgres.js';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';
import { listStatements } from './statements.js';
import { connect } from '../dist/db/connect.js';
import { bindSource } from '../dist/db/bind-source.js';
import { asyncTask } from '../dist/db/profiles/builtin.js';
import { scanSummary } from '../dist/verbs/scan/scan.js';
import { buildReport } from '../dist/verbs/report/report.js';
import { THRESHOLD_METRICS } from '../dist/core/thresholds.js';
import { createIndexSql, recommendedIndexes } from '../dist/ops/full-scan.js';
import { sqlLiteral } from '../dist/db/engines/postgres/copy.js';
import { inlinePlaceholders } from '../dist/db/engines/postgres/placeholders.js';

const DATABASE = 'taskrecon_bench';
const DB_URL = `${PG_SERVER}/${DATABASE}`;
/** The outage mix lists ~88% of its rows: 455k rows list ~400k. */
const NDJSON = { table: 'async_task_outage_455k', rows: 455_000, mix: 'outage' };

const psqlArgs = (...statements) => [DB_URL, '-q', '-X', ...statements.flatMap((s) => ['-c', s])];

/** The statements scan's summary and report send, parameters inlined, recorded from the built code. */
async function commandStatements(db, source) {
  const recorded = [];
  const recorder = Object.create(db, {
    query: {
      value: async (sql, params = []) => {
        if (/^\s*SELECT\b/i.test(sql) && !/pg_catalog|pg_class|information_schema/i.test(sql))
          recorded.push(inlinePlaceholders(sql, params, sqlLiteral));
        return db.query(sql, params);
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

/** EXPLAIN (ANALYZE, BUFFERS) of one statement: its time, the scans of its plan, heap fetches and buffers. */
async function explain(client, sql) {
  const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`);
  const plan = rows[0]['QUERY PLAN'][0];
  const scans = [];
  let heapFetches = 0;
  const walk = (node) => {
    if (/Scan/.test(node['Node Type']))
      scans.push(
        `${node['Node Type']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''} (${node['Actual Rows'] * (node['Actual Loops'] ?? 1)} rows)`,
      );
    heapFetches += node['Heap Fetches'] ?? 0;
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(plan.Plan);
  return {
    ms: plan['Execution Time'],
    scans: scans.join('; '),
    heapFetches,
    buffers: (plan.Plan['Shared Hit Blocks'] ?? 0) + (plan.Plan['Shared Read Blocks'] ?? 0),
  };
}

export async function runPostgres({ ROWS, RUNS, OUT, TARGET, rounds, log, fmt, int, pass }) {
  const table = ROWS === 5_000_000 ? 'async_task_prod_5m' : `async_task_prod_${ROWS}`;
  await generatePostgres({ table, rows: ROWS, mix: 'production', database: DATABASE, log });
  const db = await connect(DB_URL);
  const source = await bindSource(db, { ...asyncTask, table }, 'bench');
  const have = await db.indexes(table);
  const wanted = recommendedIndexes(source);
  const client = new pg.Client({ connectionString: DB_URL });
  await client.connect();
  for (const index of wanted) {
    const present = have.find((i) => i.name === index.name);
    if (present && present.columns.join(',') !== index.columns.join(',')) {
      await client.query(`DROP INDEX "${index.name}"`);
    } else if (present) continue;
    log(`${table}: ${createIndexSql(source, index)}`);
    await client.query(createIndexSql(source, index));
  }
  log(`${table}: VACUUM (ANALYZE)`);
  await client.query(`VACUUM (ANALYZE) ${table}`);
  const version = (await client.query('SHOW server_version')).rows[0].server_version;
  const settings = Object.fromEntries(
    (
      await client.query(
        `SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'max_parallel_workers_per_gather', 'jit')`,
      )
    ).rows.map((r) => [
      r.name,
      r.unit === '8kB' ? `${(Number(r.setting) * 8) / 1024} MiB` : `${r.setting}${r.unit ?? ''}`,
    ]),
  );
  const baselineSql = `SELECT biz_type, status, COUNT(*) FROM ${table} GROUP BY biz_type, status`;
  const RUN_JS = join(import.meta.dirname, '..', 'bin', 'run.js');
  const taskrecon = (args) => () =>
    measure(process.execPath, [RUN_JS, ...args, '--db', DB_URL, '--profile', 'async-task', '--table', table]);

  log('warm-up');
  await measure('psql', psqlArgs(baselineSql));
  const summary = await rounds('summary', {
    baseline: () => measure('psql', psqlArgs(baselineSql)),
    scan: taskrecon(['scan', '--json', '--limit', '20']),
    report: taskrecon(['report', '--json']),
    startup: () => measure(process.execPath, [RUN_JS, '--version']),
  });
  const med = Object.fromEntries(
    Object.entries(summary).map(([k, s]) => [k, median(s.map((r) => r.seconds))]),
  );

  const statements = await commandStatements(db, source);
  const examined = [{ command: 'baseline', statement: baselineSql, ...(await explain(client, baselineSql)) }];
  for (const [command, list] of Object.entries(statements))
    for (const sql of list) examined.push({ command, statement: sql, ...(await explain(client, sql)) });
  await db.close();

  // ndjson: warm, and with shared buffers refilled by other pages, against psql COPY on the same rows.
  await generatePostgres({ ...NDJSON, database: DATABASE, log });
  const nowEpoch = Number(
    (await client.query('SELECT FLOOR(EXTRACT(EPOCH FROM now()))::bigint AS n')).rows[0].n,
  );
  const lists = await listStatements(NDJSON.table, nowEpoch, 'postgres');
  const listed = (
    await client.query(lists.map((s) => `SELECT COUNT(*) AS n FROM (${s}) l`).join(' UNION ALL '))
  ).rows.reduce((sum, r) => sum + Number(r.n), 0);
  const raw = async () =>
    measure(
      'psql',
      psqlArgs(
        ...(await listStatements(NDJSON.table, nowEpoch, 'postgres')).map((s) => `COPY (${s}) TO STDOUT`),
      ),
    );
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
  await raw(); // warm shared buffers
  const warm = await rounds('ndjson warm', { raw, ours });
  // A large sequential scan goes through a small ring of buffers and evicts nothing: an index scan
  // of 1.5M rows of the 5M-row table fills shared buffers (128 MiB by default) with its pages instead.
  const evict = async () => {
    await client.query('BEGIN');
    await client.query('SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off');
    await client.query(`SELECT SUM(length(last_error)) FROM ${table} WHERE id <= 1500000`);
    await client.query('COMMIT');
  };
  const cold = await rounds('ndjson cold', {
    raw: async () => (await evict(), raw()),
    ours: async () => (await evict(), ours()),
  });
  await client.end();

  const nd = (series) => {
    const r = median(series.raw.map((x) => x.seconds));
    const o = median(series.ours.map((x) => x.seconds));
    return {
      raw: r,
      ours: o,
      ratio: r / o,
      rawRss: Math.max(...series.raw.map((x) => x.peakRssMb)),
      oursRss: Math.max(...series.ours.map((x) => x.peakRssMb)),
      each: `psql ${series.raw.map((x) => fmt(x.seconds, 3)).join(' / ')}; taskrecon ${series.ours.map((x) => fmt(x.seconds, 3)).join(' / ')} s (${series.ours.map((x) => fmt(x.peakRssMb, 1)).join(' / ')} MB)`,
    };
  };
  const w = nd(warm);
  const c = nd(cold);
  const worst = Math.min(w.ratio, c.ratio);
  const worstRss = Math.max(w.oursRss, c.oursRss);
  const eachRun = (k) => summary[k].map((r) => fmt(r.seconds, 3)).join(' / ');
  const summaryRow = (what, key, target) => {
    const ratio = med[key] / med.baseline;
    return {
      what,
      'median s': fmt(med[key], 3),
      'each run s': eachRun(key),
      'peak RSS MB': fmt(Math.max(...summary[key].map((r) => r.peakRssMb)), 1),
      'ratio to baseline': `${fmt(ratio, 3)}×`,
      target: target === undefined ? '' : `≤ ${target}×`,
      verdict: target === undefined ? '' : pass(ratio <= target),
    };
  };
  const body = [
    '## Production primary on PostgreSQL: index-served scan and report, ndjson through COPY warm and cold',
    '',
    machineFacts({ postgres: version, ...settings, runs: RUNS, 'peak RSS': rssMethod }),
    '',
    `Table \`${table}\`: ${int(ROWS)} rows of the classic task-table design (\`taskrecon init\`'s PostgreSQL DDL), 97% success (\`bench/generate-postgres.js\`, mix production), ` +
      `with doctor's recommended indexes (${wanted.map((i) => `\`${createIndexSql(source, i)}\``).join(' ')}), then VACUUM (ANALYZE) (the visibility map lets index-only scans skip the heap). ` +
      'Wall time of each command as a process (Node start-up included; `taskrecon --version` alone is shown for it), interleaved with the baseline, median of the runs.',
    '',
    markdownTable([
      summaryRow('baseline: `GROUP BY biz_type, status` by psql (the plan PostgreSQL picks)', 'baseline'),
      summaryRow('`taskrecon scan --json --limit 20`', 'scan', TARGET.scan),
      summaryRow('`taskrecon report --json`', 'report', TARGET.report),
      summaryRow('`taskrecon --version` (Node start-up only)', 'startup'),
    ]),
    '',
    'Each statement under `EXPLAIN (ANALYZE, BUFFERS)`, run alone on one connection after the timed runs (parameters inlined):',
    '',
    markdownTable(
      examined.map((e) => ({
        command: e.command,
        statement: `\`${e.statement.replace(/\s+/g, ' ').slice(0, 200)}${e.statement.length > 200 ? '…' : ''}\``,
        'execution ms': fmt(e.ms, 1),
        scans: e.scans,
        'heap fetches': int(e.heapFetches),
        'buffers (hit + read)': int(e.buffers),
      })),
    ),
    '',
    `\`scan --format ndjson --limit 0\` (lists streamed by \`COPY (…) TO STDOUT\` and decoded into NDJSON) against \`psql\` running \`COPY (…) TO STDOUT\` of the same list statements, both to /dev/null, on \`${NDJSON.table}\` (${int(NDJSON.rows)} rows, ${int(listed)} listed). ` +
      'Warm: shared buffers hold the table (one psql run first). Cold: before each run an index scan of 1.5M rows of the 5M-row table refills shared buffers with other pages (the OS page cache is not dropped: the server reads from memory, not the disk).',
    '',
    markdownTable(
      [
        ['warm', w],
        ['cold', c],
      ].map(([run, x]) => ({
        run,
        'psql s': fmt(x.raw, 3),
        'taskrecon s': fmt(x.ours, 3),
        'rows/s ratio (taskrecon ÷ psql)': `${fmt(x.ratio, 3)}×`,
        'taskrecon peak RSS MB': fmt(x.oursRss, 1),
        'psql peak RSS MB': fmt(x.rawRss, 1),
        'each run': x.each,
      })),
    ),
    '',
    `- ndjson ≥ ${TARGET.ndjsonPg}× of psql's rows/s (worst of warm and cold): ${fmt(worst, 3)}× — ${pass(worst >= TARGET.ndjsonPg)}; peak RSS < ${TARGET.rssMb} MB: ${fmt(worstRss, 1)} MB — ${pass(worstRss < TARGET.rssMb)}.`,
    `- scan ≤ ${TARGET.scan}× baseline: ${fmt(med.scan / med.baseline, 3)}× — ${pass(med.scan / med.baseline <= TARGET.scan)}; report ≤ ${TARGET.report}× baseline: ${fmt(med.report / med.baseline, 3)}× — ${pass(med.report / med.baseline <= TARGET.report)}.`,
    '',
    `Re-run: \`npm run build:dev && node bench/production.js --engine postgres --runs ${RUNS}\` (the tables are kept in the database \`${DATABASE}\`).`,
  ].join('\n');
  updateSection(OUT, 'production-postgres', body);
  log(`wrote the production-postgres section of ${OUT}`);
}
