#!/usr/bin/env node
/**
 * `diff` benchmarks (the performance targets): 2M tasks against 2M business rows on the local MariaDB.
 * - same server: `taskrecon diff` (chunked LEFT JOIN anti-joins + the orphan walk + counts) beside
 *   one server-side LEFT JOIN anti-join of the same tables run by the `mariadb` client;
 * - cross server: the business table in another database over a second connection (segment
 *   checksums), when the tables match and with 0.1% of the rows differing.
 * Runs are interleaved, medians of N (3 by default), peak RSS of each child; the section
 * `bench:diff` of bench/RESULTS.md is rewritten.
 *
 *   npm run build && node bench/diff.js [--rows 2000000] [--runs 3] [--buffer-pool 2G|server] [--out FILE]
 *
 * Datasets (databases taskrecon_bench_diff{,_match,_differ}) are built on first use and reused.
 * `--buffer-pool` sizes InnoDB's buffer pool to hold them (as a production server's holds its
 * working set) for the run and puts the server's own size back at the end; `server` keeps it.
 */
import mysql from 'mysql2/promise';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';
import { mariadbArgs } from './generate.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUN_JS = join(ROOT, 'bin', 'run.js');
const SERVER = 'mysql://root@127.0.0.1:3306';
const TASKS_DB = 'taskrecon_bench_diff';
const MATCH_DB = 'taskrecon_bench_diff_match';
const DIFFER_DB = 'taskrecon_bench_diff_differ';
const TARGET = { ratio: 1.2, rssMb: 150, crossRowsPerSecond: 3_000_000 };

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '2000000' },
    runs: { type: 'string', default: '3' },
    out: { type: 'string' },
    'buffer-pool': { type: 'string', default: '2G' },
  },
});
const ROWS = Number(values.rows);
const runs = Number(values.runs);
const outFile = values.out ?? join(ROOT, 'bench', 'RESULTS.md');
// 0.1% of the rows differ: a third missing, a third duplicated, a third orphans.
const DIFFER = Math.round(ROWS / 1000);
const MISSING = Math.round(DIFFER / 3);
const DUPLICATE = Math.round(DIFFER / 3);
const ORPHAN = DIFFER - MISSING - DUPLICATE;

const log = (message) => console.error(`[bench:diff ${new Date().toISOString().slice(11, 19)}] ${message}`);
const fmt = (n, digits = 2) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const int = (n) => Math.round(n).toLocaleString('en-US');

const BUSINESS_DDL = (table) => `CREATE TABLE ${table} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  order_id VARCHAR(64) NOT NULL,
  user_id BIGINT NOT NULL,
  amount INT NOT NULL,
  created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  KEY idx_order (order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;

async function count(conn, db, table) {
  try {
    const [rows] = await conn.query(`SELECT COUNT(*) AS n FROM \`${db}\`.\`${table}\``);
    return Number(rows[0].n);
  } catch {
    return -1;
  }
}

/**
 * Builds (once) the business table whose 0.1% of differences are spread evenly over the key range
 * (every 3000th key missing, another duplicated, an orphan beside a third), so that no key range
 * of the same-server walk is free of them.
 */
async function generateSpread(conn) {
  const stride = 3 * Math.floor(ROWS / DIFFER);
  const table = `\`${TASKS_DB}\`.user_coupon_spread`;
  const residues = (r) => (r > ROWS ? 0 : Math.floor((ROWS - r) / stride) + 1);
  const want = ROWS - Math.floor(ROWS / stride) + residues(stride / 3) + residues((2 * stride) / 3);
  if ((await count(conn, TASKS_DB, 'user_coupon_spread')) === want) return;
  log('building the business table with the differences spread evenly');
  await conn.query(`DROP TABLE IF EXISTS ${table}`);
  await conn.query(BUSINESS_DDL(table));
  const key = `CONCAT('PAY2026', LPAD(seq, 9, '0'))`;
  await conn.query(
    `INSERT INTO ${table} (order_id, user_id, amount) SELECT ${key}, seq % 100000, 10 FROM seq_1_to_${ROWS} WHERE seq % ${stride} <> 0`,
  );
  await conn.query(
    `INSERT INTO ${table} (order_id, user_id, amount)
     SELECT IF(seq % ${stride} = ${stride / 3}, ${key}, CONCAT(${key}, 'x')), seq % 100000, 10 FROM seq_1_to_${ROWS}
      WHERE seq % ${stride} IN (${stride / 3}, ${(2 * stride) / 3})`,
  );
}

/** Builds (once) 2M success tasks, a matching business table and one with 0.1% differing. */
async function generate(conn) {
  const want = { tasks: ROWS, match: ROWS, differ: ROWS - MISSING + DUPLICATE + ORPHAN };
  if (
    (await count(conn, TASKS_DB, 'async_task')) === want.tasks &&
    (await count(conn, TASKS_DB, 'user_coupon')) === want.differ &&
    (await count(conn, MATCH_DB, 'user_coupon')) === want.match &&
    (await count(conn, DIFFER_DB, 'user_coupon')) === want.differ
  ) {
    log('datasets exist; reusing them');
    return;
  }
  log(`building ${int(ROWS)} tasks and business tables (a few minutes)`);
  for (const db of [TASKS_DB, MATCH_DB, DIFFER_DB]) {
    await conn.query(`DROP DATABASE IF EXISTS \`${db}\``);
    await conn.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
  }
  await conn.query(`CREATE TABLE \`${TASKS_DB}\`.async_task (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, biz_type VARCHAR(32) NOT NULL, biz_id VARCHAR(64) NOT NULL,
    event_id VARCHAR(64) NOT NULL, payload JSON NULL, status TINYINT NOT NULL DEFAULT 0, retry_count INT NOT NULL DEFAULT 0,
    next_retry_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, last_error VARCHAR(512) NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (id), UNIQUE KEY uk_event_id (event_id), KEY idx_status_next_retry (status, next_retry_time), KEY idx_biz (biz_type, biz_id)
  ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  await conn.query(
    `INSERT INTO \`${TASKS_DB}\`.async_task (biz_type, biz_id, event_id, payload, status, retry_count, created_at, updated_at)
     SELECT 'coupon', CONCAT('PAY2026', LPAD(seq, 9, '0')), CONCAT('evt-', seq), '{"couponTemplate":"NEWUSER10"}', 2, 0,
            NOW() - INTERVAL (${ROWS} - seq) SECOND, NOW() - INTERVAL (${ROWS} - seq) SECOND
       FROM seq_1_to_${ROWS}`,
  );
  log('tasks built');
  await conn.query(BUSINESS_DDL(`\`${MATCH_DB}\`.user_coupon`));
  await conn.query(
    `INSERT INTO \`${MATCH_DB}\`.user_coupon (order_id, user_id, amount) SELECT CONCAT('PAY2026', LPAD(seq, 9, '0')), seq % 100000, 10 FROM seq_1_to_${ROWS}`,
  );
  log('matching business table built');
  // Differing: every 1000th-ish order has no coupon, some have two, and some coupons have no task.
  const stride = Math.floor(ROWS / DIFFER);
  for (const db of [DIFFER_DB, TASKS_DB]) {
    await conn.query(BUSINESS_DDL(`\`${db}\`.user_coupon`));
    await conn.query(
      `INSERT INTO \`${db}\`.user_coupon (order_id, user_id, amount)
       SELECT CONCAT('PAY2026', LPAD(seq, 9, '0')), seq % 100000, 10 FROM seq_1_to_${ROWS}
        WHERE NOT (seq % ${stride} = 0 AND seq / ${stride} <= ${MISSING})`,
    );
    await conn.query(
      `INSERT INTO \`${db}\`.user_coupon (order_id, user_id, amount)
       SELECT CONCAT('PAY2026', LPAD(seq, 9, '0')), seq % 100000, 10 FROM seq_1_to_${ROWS}
        WHERE seq % ${stride} = 1 AND seq DIV ${stride} < ${DUPLICATE}`,
    );
    await conn.query(
      `INSERT INTO \`${db}\`.user_coupon (order_id, user_id, amount)
       SELECT CONCAT('ORPHAN', LPAD(seq, 9, '0')), seq, 10 FROM seq_1_to_${ORPHAN}`,
    );
    log(`differing business table built in ${db}`);
  }
}

function config(dir) {
  const file = join(dir, 'taskrecon.config.yaml');
  writeFileSync(
    file,
    `db: ${SERVER}/${TASKS_DB}
rules:
  - { name: same-server, bizType: coupon, business: { table: user_coupon, key: order_id } }
  - { name: same-no-orphans, bizType: coupon, business: { table: user_coupon, key: order_id, orphans: false } }
  - { name: same-spread, bizType: coupon, business: { table: user_coupon_spread, key: order_id } }
  - { name: cross-match, bizType: coupon, business: { table: user_coupon, key: order_id, db: "${SERVER}/${MATCH_DB}" } }
  - { name: cross-differ, bizType: coupon, business: { table: user_coupon, key: order_id, db: "${SERVER}/${DIFFER_DB}" } }
`,
  );
  return file;
}

const ANTI_JOIN = `SELECT COUNT(*) FROM async_task t LEFT JOIN user_coupon b ON b.order_id = t.biz_id
  WHERE t.biz_type = 'coupon' AND t.status = 2 AND b.order_id IS NULL`;

function baseline(table = 'user_coupon') {
  return measure('mariadb', mariadbArgs(TASKS_DB, ANTI_JOIN.replace('user_coupon', table)));
}

/**
 * The raw cost of one scan of each side's key index, by two `mariadb` clients at once (as diff
 * reads both sides at once): the time until both have answered. `hash`: a checksum of the keys
 * (what diff's first digests compute); without it only a count, hashing nothing — the floor of
 * any digest that reads every key.
 */
async function rawScans({ hash }) {
  const aggregate = (column) => (hash ? `COUNT(*), SUM(CRC32(${column}))` : 'COUNT(*)');
  const [task, business] = await Promise.all([
    measure(
      'mariadb',
      mariadbArgs(TASKS_DB, `SELECT ${aggregate('biz_id')} FROM async_task WHERE biz_type = 'coupon'`),
    ),
    measure('mariadb', mariadbArgs(MATCH_DB, `SELECT ${aggregate('order_id')} FROM user_coupon`)),
  ]);
  return {
    seconds: Math.max(task.seconds, business.seconds),
    peakRssMb: Math.max(task.peakRssMb, business.peakRssMb),
    code: task.code || business.code,
    stderr: task.stderr + business.stderr,
  };
}

/** A size such as 1G, 512M or 1073741824, in bytes. */
function bytesOf(size) {
  const m = /^(\d+)([KMG]?)$/i.exec(size);
  if (!m) throw new Error(`--buffer-pool: '${size}' is not a size such as 1G, 512M or 'server'`);
  return Number(m[1]) * 1024 ** ' KMG'.indexOf((m[2] || ' ').toUpperCase());
}

/**
 * Sizes the buffer pool for the run (MariaDB resizes it online) and returns how to put it back.
 * 'server' leaves the server's own size.
 */
async function sizeBufferPool(conn, size) {
  const [[{ bp }]] = await conn.query('SELECT @@innodb_buffer_pool_size AS bp');
  if (size === 'server') return async () => {};
  const want = bytesOf(size);
  const resize = async (bytes) => {
    await conn.query('SET GLOBAL innodb_buffer_pool_size = ?', [bytes]);
    // The resize runs in the background; wait until the server reports it done.
    for (let i = 0; i < 600; i++) {
      const [[{ s }]] = await conn.query(
        "SELECT VARIABLE_VALUE AS s FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_RESIZE_STATUS'",
      );
      if (/completed/i.test(s ?? '') || !s) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  if (Number(bp) !== want) {
    log(`buffer pool: ${Number(bp) / 2 ** 20} MiB → ${want / 2 ** 20} MiB for the run`);
    await resize(want);
  }
  return async () => {
    if (Number(bp) === want) return;
    log(`buffer pool: back to ${Number(bp) / 2 ** 20} MiB`);
    await resize(Number(bp));
  };
}

/** Reads every table of the run once, so the first measured run does not pay for the cold pool alone. */
async function warm(conn) {
  for (const [db, table] of [
    [TASKS_DB, 'async_task'],
    [TASKS_DB, 'user_coupon'],
    [TASKS_DB, 'user_coupon_spread'],
    [MATCH_DB, 'user_coupon'],
    [DIFFER_DB, 'user_coupon'],
  ]) {
    await conn.query(`SELECT COUNT(*), SUM(LENGTH(\`${db}\`.\`${table}\`.id)) FROM \`${db}\`.\`${table}\``);
  }
  await conn.query(
    `SELECT COUNT(*), SUM(CRC32(biz_id)) FROM \`${TASKS_DB}\`.async_task WHERE biz_type = 'coupon'`,
  );
  for (const db of [TASKS_DB, MATCH_DB, DIFFER_DB])
    await conn.query(`SELECT COUNT(*), SUM(CRC32(order_id)) FROM \`${db}\`.user_coupon`);
  await conn.query(`SELECT COUNT(*), SUM(CRC32(order_id)) FROM \`${TASKS_DB}\`.user_coupon_spread`);
}

async function diff(configFile, rule, stdout, extra = []) {
  const run = await measure(
    process.execPath,
    [RUN_JS, 'diff', '--config', configFile, '--rule', rule, '--json', '--samples', '3', ...extra],
    { stdout },
  );
  // diff exits 1 when it finds something: that is its result, not a failure.
  if (run.code !== 0 && run.code !== 1)
    throw new Error(`diff ${rule} exited ${run.code}: ${run.stderr.slice(0, 2000)}`);
  // The command's own clock: from its first statement to the rule's result (no Node start-up).
  run.diffSeconds = JSON.parse(readFileSync(stdout, 'utf8')).rules[0].durationMs / 1000;
  return run;
}

async function main() {
  const conn = await mysql.createConnection(`${SERVER}/mysql`);
  await generate(conn);
  await generateSpread(conn);
  const restorePool = await sizeBufferPool(conn, values['buffer-pool']);
  try {
    await warm(conn);
    const [server] = await conn.query('SELECT VERSION() AS v, @@innodb_buffer_pool_size AS bp');
    await runAll(server[0]);
  } finally {
    await restorePool();
    await conn.end();
  }
}

async function runAll(server) {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-bench-diff-'));
  const configFile = config(dir);
  const outputs = {
    same: join(dir, 'same.json'),
    noOrphans: join(dir, 'no-orphans.json'),
    join: join(dir, 'join.json'),
    spread: join(dir, 'spread.json'),
    match: join(dir, 'match.json'),
    differ: join(dir, 'differ.json'),
  };
  const series = {
    ...{ baseline: [], same: [], noOrphans: [], join: [], spreadBaseline: [], spread: [] },
    ...{ raw: [], rawCounts: [], match: [], differ: [] },
  };
  const RULE = {
    same: 'same-server',
    noOrphans: 'same-no-orphans',
    join: 'same-server',
    spread: 'same-spread',
  };
  const sameServer = ['baseline', 'same', 'noOrphans', 'join', 'spreadBaseline', 'spread'];
  for (let i = 0; i < runs; i++) {
    const order = i % 2 === 0 ? sameServer : [...sameServer].reverse();
    for (const which of order) {
      const run =
        which === 'baseline'
          ? await baseline()
          : which === 'spreadBaseline'
            ? await baseline('user_coupon_spread')
            : await diff(configFile, RULE[which], outputs[which], which === 'join' ? ['--walk', 'join'] : []);
      if (which.endsWith('aseline') && run.code !== 0)
        throw new Error(`baseline exited ${run.code}: ${run.stderr}`);
      series[which].push(run);
      log(`${which} run ${i + 1}: ${fmt(run.seconds, 3)} s, ${fmt(run.peakRssMb, 1)} MB`);
    }
    const raw = await rawScans({ hash: true });
    series.raw.push(raw);
    log(`raw checksums run ${i + 1}: ${fmt(raw.seconds, 3)} s`);
    const counts = await rawScans({ hash: false });
    series.rawCounts.push(counts);
    log(`raw counts run ${i + 1}: ${fmt(counts.seconds, 3)} s`);
    for (const which of ['match', 'differ']) {
      const run = await diff(configFile, `cross-${which}`, outputs[which]);
      series[which].push(run);
      log(`cross-${which} run ${i + 1}: ${fmt(run.seconds, 3)} s, ${fmt(run.peakRssMb, 1)} MB`);
    }
  }
  const result = (file) => JSON.parse(readFileSync(file, 'utf8')).rules[0];
  const same = result(outputs.same);
  const noOrphans = result(outputs.noOrphans);
  const joined = result(outputs.join);
  const spread = result(outputs.spread);
  const match = result(outputs.match);
  const differ = result(outputs.differ);
  const t = (s) => median(s.map((r) => r.seconds));
  const rss = (s) => Math.max(...s.map((r) => r.peakRssMb));
  const ratio = t(series.same) / t(series.baseline);
  const noOrphansRatio = t(series.noOrphans) / t(series.baseline);
  const joinRatio = t(series.join) / t(series.baseline);
  const spreadRatio = t(series.spread) / t(series.spreadBaseline);
  const targets = (r, s) =>
    `${fmt(r)}× baseline (≤ ${TARGET.ratio}×: ${r <= TARGET.ratio ? '**met**' : '**missed**'}); RSS < ${TARGET.rssMb} MB: ${rss(s) < TARGET.rssMb ? '**met**' : '**missed**'}`;
  const found = (r) =>
    `${int(r.tasksChecked)} tasks; missing ${r.findings.missing}, duplicate ${r.findings.duplicate}, orphan ${r.findings.orphan}; walk ${r.walk}`;
  const inCommand = (s) => median(s.map((r) => r.diffSeconds));
  const matchRate = ROWS / inCommand(series.match);
  const matchWallRate = ROWS / t(series.match);
  /** A row of the table: its label, its runs, what it found and how it did against the target. */
  const row = (run, s, result, target = '') => ({
    run,
    'median s': fmt(t(s), 3),
    'peak RSS MB': fmt(rss(s), 1),
    result,
    target,
  });
  const rows = [
    row('same server: one LEFT JOIN anti-join (`mariadb` client)', series.baseline, 'missing count only'),
    row(
      'same server: `taskrecon diff` (range digests, then both key indexes merged where they differ)',
      series.same,
      found(same),
      targets(ratio, series.same),
    ),
    row(
      'same server: `taskrecon diff`, rule with `orphans: false`',
      series.noOrphans,
      found(noOrphans),
      targets(noOrphansRatio, series.noOrphans),
    ),
    row(
      'same server: `taskrecon diff --walk join` (chunked LEFT JOIN anti-joins both ways)',
      series.join,
      found(joined),
      targets(joinRatio, series.join),
    ),
    row(
      'same server, differences spread evenly: one LEFT JOIN anti-join (`mariadb` client)',
      series.spreadBaseline,
      'missing count only',
    ),
    row(
      'same server, differences spread evenly: `taskrecon diff` (every range differs)',
      series.spread,
      found(spread),
      targets(spreadRatio, series.spread),
    ),
    {
      run: 'raw: one checksum scan of each table (two `mariadb` clients at once)',
      'median s': fmt(t(series.raw), 3),
      'peak RSS MB': fmt(rss(series.raw), 1),
      result: `${int(ROWS / t(series.raw))} rows/s`,
      target: '',
    },
    {
      run: 'raw: one count of each key index, hashing nothing (two `mariadb` clients at once)',
      'median s': fmt(t(series.rawCounts), 3),
      'peak RSS MB': fmt(rss(series.rawCounts), 1),
      result: `${int(ROWS / t(series.rawCounts))} rows/s: the floor of any digest that reads every key`,
      target: '',
    },
    {
      run: 'cross server, tables match',
      'median s': fmt(t(series.match), 3),
      'peak RSS MB': fmt(rss(series.match), 1),
      result: `${int(matchRate)} rows/s in the command (${fmt(inCommand(series.match), 3)} s; ${fmt(inCommand(series.match) / t(series.raw))}× the raw scans), ${int(matchWallRate)} rows/s counting start-up; findings ${Object.values(match.findings).reduce((a, b) => a + b, 0)}; levels ${match.checksum.length}`,
      target: `≥ ${int(TARGET.crossRowsPerSecond)} rows/s: ${matchRate >= TARGET.crossRowsPerSecond ? '**met**' : '**missed**'} (counting the keys alone: ${int(ROWS / t(series.rawCounts))} rows/s)`,
    },
    {
      run: `cross server, 0.1% differing (${int(DIFFER)} rows)`,
      'median s': fmt(t(series.differ), 3),
      'peak RSS MB': fmt(rss(series.differ), 1),
      result: `${int(ROWS / inCommand(series.differ))} rows/s in the command (${fmt(inCommand(series.differ), 3)} s); missing ${differ.findings.missing}, duplicate ${differ.findings.duplicate}, orphan ${differ.findings.orphan}; segments per level ${differ.checksum.map((l) => `${l.mismatched}/${l.segments}`).join(' → ')}`,
      target: `time reported; RSS < ${TARGET.rssMb} MB: ${rss(series.differ) < TARGET.rssMb ? '**met**' : '**missed**'}`,
    },
  ];
  const body = `## diff: 2M tasks against 2M business rows

${machineFacts({ runs, mariadb: server.v, innodb_buffer_pool_size: `${Number(server.bp) / 2 ** 20} MiB${values['buffer-pool'] === 'server' ? '' : ' (sized for the run, then restored)'}`, 'peak RSS': rssMethod })}

${markdownTable(rows)}

Datasets: \`${TASKS_DB}.async_task\` (${int(ROWS)} success tasks of biz type coupon, the reference DDL with
\`idx_biz (biz_type, biz_id)\`), \`user_coupon\` with \`KEY (order_id)\`: in \`${TASKS_DB}\` and \`${DIFFER_DB}\`
${int(MISSING)} coupons missing, ${int(DUPLICATE)} duplicated and ${int(ORPHAN)} orphans (0.1% of the rows);
\`${MATCH_DB}\` matches the tasks exactly. Cross-server runs read the business table over a second
connection (another database on the same local server; nothing is joined across them).
Every table is read once before the first run, so all runs find the same warm buffer pool.
Times are wall times of the whole process (Node start-up, connections and schema checks included),
except "in the command": the rule's \`durationMs\` from diff's own JSON, from its first statement to its
result. rows/s = task rows ÷ that time. The baseline reads only what one anti-join needs (missing);
\`diff\` also finds duplicates and orphans and counts the tasks, on two connections at once. On one
server it walks the business key in ranges: a range whose digests (count, CRC32 sum and xor of the
keys on each side) agree is done; one that differs is read from both key indexes in key order and
merged, and its suspects checked by the server. \`user_coupon_spread\` (in \`${TASKS_DB}\`) has its
0.1% of differences spread evenly over the keys (every 3000th key missing, another duplicated, an
orphan beside a third), so every range differs; in \`user_coupon\` they lie in the first third of the
keys. \`--walk join\` (and a rule the merge cannot take) walks with the anti-joins instead. Cross-server, both sides are digested at once, first by CRC32 of the keys as
stored (index-only) and, only where that differs, by the collation's normal form in hash segments:
the first split streams each side's hashes and counts them in the client into up to 2^20 segments,
and only the rows of the segments that differ are read. Both "servers" here are one MariaDB on the
same cores, so the two sides' scans share the CPU; the count-only row is what reading every key of
both indexes costs before any hashing.
If the load average at start is far above the core count, other work shared the machine: compare rows
within one run.
`;
  updateSection(outFile, 'diff', body);
  log(`wrote the diff section of ${outFile}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
