#!/usr/bin/env node
/**
 * `scan --format ndjson` on MariaDB/MySQL against `mariadb --quick -N -B` on the same rows: a
 * 1M-row table with 400k rows due (`bench/generate.js --mix backlog`), the due list only
 * (`scan --status pending --limit 0`), warm (the table read once first). In one run, interleaved in
 * rotating order, median of N:
 *   - raw, same order: the due list's statement as taskrecon builds it, unpaged
 *     (ORDER BY next_retry_time, id through the (status, next_retry_time) index);
 *   - raw, plain order: the same SELECT and WHERE without ORDER BY (the plan the server picks);
 *   - raw, primary-key order: the same with FORCE INDEX (PRIMARY) … ORDER BY id;
 *   - raw, two clients at once: the list-order statement cut at its middle row, a half each;
 *   - taskrecon with `--order next-retry` (the list order, against the first);
 *   - taskrecon with no --order: a list this large a share of the table streams in primary-key
 *     order through the primary key (against the third).
 *
 *   node bench/ndjson.js [--rows 1000000] [--runs 3] [--out bench/RESULTS.md]
 *                        [--node PATH --root DIR]
 *
 * --node runs taskrecon on another Node.js (e.g. an LTS line users run) from a checkout installed
 * and built by that Node (--root: its code caches are that Node's); its figures go to a section of
 * their own, named for the Node's major version.
 */
import mysql from 'mysql2/promise';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { generate, mariadbArgs, SERVER } from './generate.js';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';
import { listStatements } from './statements.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATABASE = 'taskrecon_bench';
const DB_URL = `mysql://root@127.0.0.1:3306/${DATABASE}`;
const TARGET = { ratio: 0.9, rssMb: 150 };

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '3' },
    out: { type: 'string' },
    cpuProf: { type: 'string' },
    node: { type: 'string' },
    root: { type: 'string' },
  },
});
if (values.node && !values.root)
  throw new Error('--node needs --root: a checkout installed and built by that Node');
const NODE = values.node ?? process.execPath;
const RUN_JS = join(values.root ?? ROOT, 'bin', 'run.js');
const NODE_VERSION = values.node
  ? spawnSync(NODE, ['-v'], { encoding: 'utf8' }).stdout.trim()
  : process.version;
const OTHER_NODE = NODE_VERSION.split('.')[0] !== process.version.split('.')[0];
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const OUT = values.out ?? join(ROOT, 'bench', 'RESULTS.md');
const TABLE = `async_task_backlog_${ROWS === 1_000_000 ? '1m' : ROWS}`;

const log = (m) => console.error(`[ndjson ${new Date().toISOString().slice(11, 19)}] ${m}`);
const fmt = (n, d = 3) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const int = (n) => Math.round(n).toLocaleString('en-US');
const pass = (ok) => (ok ? '**met**' : '**missed**');

async function main() {
  const loadAtStart = (await import('node:os')).loadavg();
  await generate({ table: TABLE, rows: ROWS, mix: 'backlog', database: DATABASE, log });
  const conn = await mysql.createConnection({ ...SERVER, database: DATABASE });
  const [[facts]] = await conn.query(
    'SELECT VERSION() AS v, @@innodb_buffer_pool_size AS bp, UNIX_TIMESTAMP() AS now',
  );
  const [[size]] = await conn.query(
    'SELECT DATA_LENGTH + INDEX_LENGTH AS bytes FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
    [DATABASE, TABLE],
  );
  // Held whole in the buffer pool the server is quick and the client's own cost shows (the worse
  // case for the ratio); larger than it, the server's reads are the slower side. Each case has a
  // section of its own: run once as the server is, once with the pool raised above the table.
  const inMemory = Number(facts.bp) > Number(size.bytes);
  const section = `${inMemory ? 'ndjson-due-in-memory' : 'ndjson-due'}${OTHER_NODE ? `-${NODE_VERSION.split('.')[0]}` : ''}`;
  const measured = inMemory ? 'warm (the table in memory)' : 'server-bound';
  const nowEpoch = Number(facts.now);
  const due = (await listStatements(TABLE, nowEpoch)).find((s) => /`status` = 0\b/.test(s));
  if (!due) throw new Error('no due-list statement');
  const plain = due.replace(/ ORDER BY .*$/s, '');
  const byId = due
    .replace(/ FROM (`[^`]+`)/, ' FROM $1 FORCE INDEX (PRIMARY)')
    .replace(/ ORDER BY .*$/s, ' ORDER BY `id`');
  const [[{ n: listed }]] = await conn.query(
    plain.replace(/^SELECT .*? FROM /s, 'SELECT COUNT(*) AS n FROM '),
  );
  // The list cut in two at its middle row, for two raw clients reading a half each at once (what
  // taskrecon's read-ahead does with its connections).
  const [[middle]] = await conn.query(
    `${due.replace(/^SELECT .*? FROM /s, 'SELECT CAST(`next_retry_time` AS CHAR) AS t, `id` AS id FROM ')} LIMIT 1 OFFSET ${Math.floor(Number(listed) / 2) - 1}`,
  );
  const [t, id] = ["'" + middle.t + "'", middle.id];
  const halves = [
    `(\`next_retry_time\` < ${t} OR (\`next_retry_time\` = ${t} AND \`id\` <= ${id}))`,
    `(\`next_retry_time\` > ${t} OR (\`next_retry_time\` = ${t} AND \`id\` > ${id}))`,
  ].map((w) => due.replace(/ ORDER BY /, ` AND ${w} ORDER BY `));
  let halvesListed = 0;
  for (const half of halves) {
    const [[{ n }]] = await conn.query(
      half.replace(/ ORDER BY .*$/s, '').replace(/^SELECT .*? FROM /s, 'SELECT COUNT(*) AS n FROM '),
    );
    halvesListed += Number(n);
  }
  if (halvesListed !== Number(listed))
    throw new Error(`the halves hold ${halvesListed} rows, the list ${listed}`);
  const halfFiles = halves.map((sql, i) => {
    const file = join(tmpdir(), `taskrecon-bench-half-${process.pid}-${i}.sql`);
    writeFileSync(file, `${sql};\n`);
    return file;
  });
  const clientArgs = mariadbArgs(DATABASE, '').slice(0, -2).join(' ');
  const explain = async (sql) => (await conn.query(`EXPLAIN ${sql}`))[0][0];
  const plans = {
    'list order': await explain(due),
    plain: await explain(plain),
    'primary key': await explain(byId),
  };
  await conn.end();

  const taskrecon = (extra) => () =>
    measure(NODE, [
      RUN_JS,
      'scan',
      '--db',
      DB_URL,
      '--profile',
      'async-task',
      '--table',
      TABLE,
      '--status',
      'pending',
      '--limit',
      '0',
      '--format',
      'ndjson',
      ...extra,
    ]);
  const runners = {
    rawSame: () => measure('mariadb', mariadbArgs(DATABASE, due)),
    rawPlain: () => measure('mariadb', mariadbArgs(DATABASE, plain)),
    rawId: () => measure('mariadb', mariadbArgs(DATABASE, byId)),
    rawHalves: () =>
      measure('sh', [
        '-c',
        halfFiles.map((f) => `mariadb ${clientArgs} < ${f} > /dev/null &`).join(' ') + ' wait',
      ]),
    oursList: taskrecon(['--order', 'next-retry']),
    ours: taskrecon([]),
  };
  log('warm-up');
  for (const run of Object.values(runners)) await run();
  const series = Object.fromEntries(Object.keys(runners).map((k) => [k, []]));
  const names = Object.keys(runners);
  for (let i = 0; i < RUNS; i++) {
    for (const name of names.map((_, j) => names[(i + j) % names.length])) {
      const run = await runners[name]();
      if (run.code !== 0) throw new Error(`${name} exited ${run.code}: ${run.stderr.slice(0, 2000)}`);
      series[name].push(run);
      log(`${name} run ${i + 1}: ${fmt(run.seconds)} s, ${fmt(run.peakRssMb, 1)} MB`);
    }
  }
  const med = (name) => median(series[name].map((r) => r.seconds));
  const rss = (name) => Math.max(...series[name].map((r) => r.peakRssMb));
  const cpu = (name) => median(series[name].map((r) => r.cpuSeconds));
  const row = (name, what, same) => ({
    what,
    'median s': fmt(med(name)),
    'rows/s': int(listed / med(name)),
    'rows/s ratio to raw, same order': same ? `${fmt(med(same) / med(name))}×` : '',
    'rows/s ratio to raw, plain order': `${fmt(med('rawPlain') / med(name))}×`,
    'CPU s (median)': fmt(cpu(name), 2),
    'peak RSS MB': fmt(rss(name), 1),
    'every run (s)': series[name].map((r) => fmt(r.seconds)).join(' / '),
  });
  const sameRatio = med('rawSame') / med('oursList');
  const idRatio = med('rawId') / med('ours');
  const peak = Math.max(rss('ours'), rss('oursList'));
  const load = (await import('node:os')).loadavg();
  const loaded = (l) => l.map((x) => x.toFixed(2)).join(' / ');
  const body = [
    `## scan --format ndjson on MariaDB: the due list of a 1M-row table, same order and plain order (${inMemory ? 'the table held whole in the buffer pool' : 'the table larger than the buffer pool'}${OTHER_NODE ? `; taskrecon on Node ${NODE_VERSION}` : ''})`,
    '',
    machineFacts({
      'taskrecon runs on': `Node ${NODE_VERSION}${OTHER_NODE ? ' (a checkout installed and built by it, so its code caches are its own)' : ''}`,
      mariadb: facts.v,
      innodb_buffer_pool_size: `${Number(facts.bp) / 2 ** 20} MiB`,
      'table (data + indexes)': `${(Number(size.bytes) / 2 ** 20).toFixed(0)} MiB`,
      runs: RUNS,
      'peak RSS': rssMethod,
      'load average at start (1/5/15 min)': loaded(loadAtStart),
      'load average at the end (1/5/15 min)': loaded(load),
    }),
    '',
    `Table \`${TABLE}\`: ${int(ROWS)} rows (\`bench/generate.js --mix backlog\`), ${int(listed)} of them due. ` +
      '`taskrecon scan --status pending --limit 0 --format ndjson` (the due list) to /dev/null against `mariadb --quick -N -B -e "<statement>"` to /dev/null, ' +
      'warm (every command run once before the measured rounds), wall time from spawn to exit (Node start-up included), interleaved in rotating order, median of the runs. ' +
      'List order: the due list statement taskrecon builds (`ORDER BY next_retry_time, id`, through the (status, next_retry_time) index), unpaged. ' +
      'Plain order: the same SELECT and WHERE with no ORDER BY (MariaDB still picks the status index). Primary-key order: the same with `FORCE INDEX (PRIMARY)` and `ORDER BY id`, which taskrecon reads with no --order on a list this large a share of the table. ' +
      "taskrecon reads a whole list in list order two pages ahead after its first page (5,000 rows, read alone): the next two pages (about 20,000 rows each, cut by next-retry time at the density of the pages before them; the list's first and last keys read from the index while the first page streams) on other connections while the current one streams out, so the server works on several pages at once; " +
      'the two-client row is the raw counterpart: two `mariadb --quick` started together, each reading one half of the list (cut at its middle row), to /dev/null.',
    '',
    markdownTable([
      row('rawSame', '`mariadb --quick`, list order', 'rawSame'),
      row('rawPlain', '`mariadb --quick`, plain order (no ORDER BY)', 'rawPlain'),
      row('rawId', '`mariadb --quick`, primary-key order', 'rawId'),
      row('rawHalves', 'two `mariadb --quick` at once, half of the list each, list order', 'rawSame'),
      row('oursList', '`taskrecon scan … --order next-retry` (list order)', 'rawSame'),
      row('ours', '`taskrecon scan …` (no --order: primary-key order here)', 'rawId'),
    ]),
    '',
    `- list order, ${measured} ≥ ${TARGET.ratio}× \`mariadb --quick\` on the same rows in the same order: ${fmt(sameRatio)}× — ${pass(sameRatio >= TARGET.ratio)}.`,
    `- no --order (primary-key order), ${measured} ≥ ${TARGET.ratio}× \`mariadb --quick\` in the same order: ${fmt(idRatio)}× — ${pass(idRatio >= TARGET.ratio)}; against the plain-order statement: ${fmt(med('rawPlain') / med('ours'))}× (list order against it: ${fmt(med('rawPlain') / med('oursList'))}×).`,
    `- against two \`mariadb --quick\` clients reading a half of the list each at once (the server working on two parts at once; taskrecon's read-ahead has it work on up to three): ${fmt(med('rawHalves') / med('oursList'))}×.`,
    `- the order's cost on the server: \`mariadb --quick\` in list order took ${fmt(med('rawSame') / med('rawId'), 2)}× the time of the same rows in primary-key order.`,
    `- peak RSS < ${TARGET.rssMb} MB: ${fmt(peak, 1)} MB — ${pass(peak < TARGET.rssMb)}.`,
    '',
    'EXPLAIN of the raw statements:',
    '',
    markdownTable(
      Object.entries(plans).map(([order, p]) => ({
        order,
        type: p.type,
        key: p.key ?? '',
        rows: int(Number(p.rows)),
        Extra: p.Extra ?? '',
      })),
    ),
    '',
    `Re-run: \`npm run build:dev && node bench/ndjson.js${OTHER_NODE ? ' --node <that Node> --root <a checkout installed with it>' : ''}\` (the table is kept between runs); for the other case, first \`SET GLOBAL innodb_buffer_pool_size = 805306368\` (and set it back after).`,
  ].join('\n');
  for (const file of halfFiles) rmSync(file, { force: true });
  updateSection(OUT, section, body);
  log(`wrote the ${section} section of ${OUT}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
