#!/usr/bin/env node
/**
 * Builds a realistic `async_task` table of 1M–10M rows on the local MariaDB, server-side, from the
 * SEQUENCE engine (INSERT … SELECT FROM seq_1_to_N in chunks), so no row crosses the wire.
 *
 *   node bench/generate.js --rows 10000000 [--table async_task] [--database taskrecon_bench]
 *                          [--mix realistic|outage|production|backlog] [--days 14] [--business] [--force]
 *
 * The table is created with the DDL of `taskrecon init` (asyncTaskDdl); its secondary indexes are
 * dropped during the load and rebuilt afterwards by a sorted index build (much faster than
 * inserting into them row by row), and the result is checked against a fresh copy of the DDL.
 *
 * Mixes (per mille of rows):
 *   realistic  success 850, compensated 15, failed 60, pending due 40, pending not due 20,
 *              processing stuck 10, processing in flight 5  (what a healthy system looks like)
 *   outage     success 50, compensated 5, failed 150, pending due 650, pending not due 50,
 *              processing stuck 80, processing in flight 15 (a downstream outage: a backlog to dump)
 *   production success 970, compensated 5, failed 12, due 6, not due 3, stuck 2, in flight 2
 *   backlog    success 520, compensated 5, failed 50, due 400, not due 15, stuck 5, in flight 5
 * Biz types: coupon, points, sms, payment_notify, refund, email, inventory_sync (weighted).
 * created_at grows with id over `--days` days; failed and retried rows carry real-looking errors
 * (HTTP 5xx, timeouts, deadlocks, JSON bodies, Chinese messages, stack traces with newlines/tabs).
 * next_retry_time follows created_at by an exponential backoff (1–16 min), as a worker that retries
 * with backoff leaves it, so the (status, next_retry_time) order roughly follows the id order.
 * "Not due" rows are due 1–8 days after generation and "in flight" rows are touched just before
 * it, so they turn stuck 10 minutes later: counts are stable once the table is a few minutes old.
 *
 * With --business it also builds `user_coupon` (MySQL flavour of the demo's business table): one
 * row per successful coupon task (order_id = biz_id), with ~0.1% missing, ~0.05% duplicated and a
 * few orphans, for reconciliation benchmarks.
 *
 * Only ever touches databases named taskrecon_bench*; only connects to 127.0.0.1.
 */
import mysql from 'mysql2/promise';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { asyncTaskDdl } from '../dist/db/ddl.js';
import { mysqlDialect } from '../dist/db/engines/mysql/dialect.js';

const USAGE = `node bench/generate.js --rows N [--table async_task] [--database taskrecon_bench]
                        [--mix realistic|outage|production|backlog] [--days 14] [--business] [--force]`;

export const SERVER = { host: '127.0.0.1', port: 3306, user: 'root' };

/** argv of the raw baseline client: `mariadb --quick -N -B DATABASE -e SQL` against SERVER. */
export function mariadbArgs(database, sql) {
  return [
    '-h',
    SERVER.host,
    '-P',
    String(SERVER.port),
    '-u',
    SERVER.user,
    '--quick',
    '-N',
    '-B',
    database,
    '-e',
    sql,
  ];
}
const CHUNK = 500_000;
/** Bumped whenever the generated data changes shape, so old tables are rebuilt. */
const GENERATOR_VERSION = 2;

export const MIXES = {
  realistic: { success: 850, compensated: 15, failed: 60, due: 40, notDue: 20, stuck: 10, inFlight: 5 },
  outage: { success: 50, compensated: 5, failed: 150, due: 650, notDue: 50, stuck: 80, inFlight: 15 },
  /** A production table that keeps growing: nearly everything succeeded long ago. */
  production: { success: 970, compensated: 5, failed: 12, due: 6, notDue: 3, stuck: 2, inFlight: 2 },
  /** A retry backlog: 40% of the table due at once (the NDJSON dump of bench/ndjson.js). */
  backlog: { success: 520, compensated: 5, failed: 50, due: 400, notDue: 15, stuck: 5, inFlight: 5 },
};

export const BIZ_TYPES = [
  ['coupon', 25],
  ['points', 20],
  ['sms', 20],
  ['payment_notify', 12],
  ['refund', 8],
  ['email', 8],
  ['inventory_sync', 7],
];

export const ERRORS = [
  'HTTP 503 Service Unavailable: upstream connect error or disconnect/reset before headers. reset reason: connection failure',
  'java.net.SocketTimeoutException: Read timed out\n\tat java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:278)\n\tat java.base/java.net.Socket$SocketInputStream.read(Socket.java:1099)',
  'SQLSTATE[40001]: Serialization failure: 1213 Deadlock found when trying to get lock; try restarting transaction',
  'points-service replied 409: {"code":"INSUFFICIENT_BALANCE","message":"积分余额不足","traceId":"7f3a9c1e"}',
  'sms gateway 429 Too Many Requests: rate limit 100/s exceeded for template "ORDER_PAID"',
  'refund channel returned FAIL: 退款金额超过可退金额 (err_code=REFUND_AMOUNT_EXCEED)',
  'cURL error 28: Operation timed out after 5001 milliseconds with 0 bytes received',
  'RedisException: read error on connection to redis:6379',
  'SQLSTATE[HY000]: General error: 1205 Lock wait timeout exceeded; try restarting transaction',
  "coupon template 'NEWUSER_50' is exhausted (issued 100000/100000)",
  'Error: connect ECONNREFUSED 127.0.0.1:8081\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1595:16)',
  'HTTP 500 Internal Server Error: <html><body><h1>500</h1>nginx</body></html>',
];

/** A SQL string literal (the generator only quotes its own constants). */
function lit(text) {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''").replace(/\n/g, '\\n').replace(/\t/g, '\\t')}'`;
}

/** CASE over a per-mille bucket: [[value, weight], ...] with weights summing to `total`. */
export function weighted(bucketSql, entries, total) {
  let at = 0;
  const whens = entries.map(([value, weight]) => {
    at += weight;
    return `WHEN ${bucketSql} < ${Math.round((at * 1000) / total)} THEN ${value}`;
  });
  return `CASE ${whens.slice(0, -1).join(' ')} ELSE ${entries[entries.length - 1][0]} END`;
}

/** The SELECT that makes rows `from`..`to` (inclusive), all times relative to @gen_now. */
function chunkSelect(from, to, rows, mix, days) {
  const m = MIXES[mix];
  const kinds = [
    ['success', m.success],
    ['compensated', m.compensated],
    ['failed', m.failed],
    ['due', m.due],
    ['notDue', m.notDue],
    ['stuck', m.stuck],
    ['inFlight', m.inFlight],
  ].map(([k, w]) => [lit(k), w]);
  const span = days * 86_400;
  const biz = weighted(
    'b',
    BIZ_TYPES.map(([name, w]) => [lit(name), w]),
    100,
  );
  const error = `ELT(1 + e % ${ERRORS.length}, ${ERRORS.map(lit).join(', ')})`;
  // h, g, e: independent pseudo-random values per row; k: the row's kind; c: created_at.
  return `
SELECT id, biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at FROM (
  SELECT seq AS id, biz AS biz_type,
         CONCAT(CASE biz WHEN 'sms' THEN 'MSG' WHEN 'refund' THEN 'RF' WHEN 'email' THEN 'ML' ELSE 'ORD' END,
                DATE_FORMAT(c, '%Y%m%d'), LPAD(seq, 10, '0')) AS biz_id,
         CONCAT(biz, '-', LPAD(HEX(h), 8, '0'), '-', LPAD(seq, 10, '0')) AS event_id,
         CASE biz
           WHEN 'coupon' THEN CONCAT('{"userId":', 10000 + g % 900000, ',"templateId":"NEWUSER_', 5 * (1 + e % 20), '","orderNo":"ORD', LPAD(seq, 10, '0'), '"}')
           WHEN 'points' THEN CONCAT('{"userId":', 10000 + g % 900000, ',"points":', 10 * (1 + e % 50), ',"reason":"order_paid"}')
           WHEN 'sms' THEN CONCAT('{"phone":"138', LPAD(g % 100000000, 8, '0'), '","template":"ORDER_PAID","params":{"amount":"', e % 500, '.00"}}')
           WHEN 'refund' THEN CONCAT('{"orderNo":"ORD', LPAD(seq, 10, '0'), '","amount":"', e % 900, '.', LPAD(g % 100, 2, '0'), '","channel":"alipay"}')
           ELSE CONCAT('{"ref":"', LPAD(seq, 10, '0'), '","attempt":1}')
         END AS payload,
         CASE k WHEN 'success' THEN 2 WHEN 'compensated' THEN 4 WHEN 'failed' THEN 3 WHEN 'stuck' THEN 1 WHEN 'inFlight' THEN 1 ELSE 0 END AS status,
         CASE k WHEN 'success' THEN IF(e % 10 < 8, 0, 1 + e % 2) WHEN 'compensated' THEN 5 WHEN 'failed' THEN 5
                WHEN 'due' THEN e % 5 WHEN 'notDue' THEN 1 + e % 4 ELSE e % 3 END AS retry_count,
         CASE k
           WHEN 'due' THEN LEAST(@gen_now, c + INTERVAL (60 * POW(2, e % 5) + g % 60) SECOND)
           WHEN 'notDue' THEN @gen_now + INTERVAL (86400 + g % (7 * 86400)) SECOND
           WHEN 'success' THEN c
           ELSE c + INTERVAL (60 * POW(2, e % 5)) SECOND
         END AS next_retry_time,
         CASE WHEN k IN ('failed', 'compensated', 'notDue') OR (k = 'due' AND e % 5 > 0) OR (k = 'success' AND e % 10 >= 8)
              THEN ${error} END AS last_error,
         c AS created_at,
         CASE k
           WHEN 'success' THEN c + INTERVAL (g % 30) SECOND
           WHEN 'stuck' THEN LEAST(@gen_now - INTERVAL 1 HOUR, c + INTERVAL (g % 600) SECOND)
           WHEN 'inFlight' THEN @gen_now - INTERVAL (g % 300) SECOND
           WHEN 'due' THEN LEAST(@gen_now, c + INTERVAL (g % 60) SECOND)
           ELSE c + INTERVAL (60 + g % 7200) SECOND
         END AS updated_at
    FROM (
      SELECT seq, h, g, e, ${biz} AS biz, ${weighted('p', kinds, 1000)} AS k,
             @gen_start + INTERVAL FLOOR((seq - 1) * ${span} / ${rows}) SECOND AS c
        FROM (SELECT seq, CRC32(seq) AS h, CRC32(seq + 1234567) AS g, CRC32(seq * 7 + 89) AS e,
                     CRC32(seq * 13 + 5) % 1000 AS b, CRC32(seq * 31 + 17) % 1000 AS p
                FROM seq_${from}_to_${to}) r
    ) s
) t`;
}

const SECONDARY = [
  ['uk_event_id', 'ADD UNIQUE KEY `uk_event_id` (`event_id`)'],
  ['idx_status_next_retry', 'ADD KEY `idx_status_next_retry` (`status`,`next_retry_time`)'],
  ['idx_biz', 'ADD KEY `idx_biz` (`biz_type`,`biz_id`)'],
];

/** CREATE TABLE text without the table name and AUTO_INCREMENT counter, to compare shapes. */
async function shapeOf(conn, table) {
  const [rows] = await conn.query(`SHOW CREATE TABLE \`${table}\``);
  return String(rows[0]['Create Table'])
    .replace(/^CREATE TABLE `[^`]+`/, 'CREATE TABLE t')
    .replace(/ AUTO_INCREMENT=\d+/, '');
}

export function checkDatabaseName(database) {
  if (!/^taskrecon_bench[a-z0-9_]*$/.test(database))
    throw new Error(`refusing database ${database}: bench databases are named taskrecon_bench*`);
}

/** Builds (or keeps, when it already matches) one dataset. Returns {table, rows, mix, seconds, reused}. */
export async function generate({
  rows,
  table = 'async_task',
  database = 'taskrecon_bench',
  mix = 'realistic',
  days = 14,
  business = false,
  force = false,
  log = console.error,
}) {
  checkDatabaseName(database);
  if (!MIXES[mix]) throw new Error(`unknown mix ${mix} (${Object.keys(MIXES).join(', ')})`);
  if (!/^[a-z0-9_]+$/.test(table)) throw new Error(`bad table name ${table}`);
  const conn = await mysql.createConnection({ ...SERVER, multipleStatements: true });
  try {
    await conn.query(`CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4`);
    await conn.query(`USE \`${database}\``);
    await conn.query(`CREATE TABLE IF NOT EXISTS bench_dataset (table_name VARCHAR(64) PRIMARY KEY, row_count BIGINT NOT NULL,
      mix VARCHAR(16) NOT NULL, days INT NOT NULL, generator INT NOT NULL, business TINYINT NOT NULL, built_at DATETIME NOT NULL, build_seconds DOUBLE NOT NULL)`);
    const [known] = await conn.query('SELECT * FROM bench_dataset WHERE table_name = ?', [table]);
    const [exists] = await conn.query('SHOW TABLES LIKE ?', [table]);
    const k = known[0];
    if (
      !force &&
      exists.length > 0 &&
      k &&
      Number(k.row_count) === rows &&
      k.mix === mix &&
      k.days === days &&
      (!business || k.business)
    ) {
      log(
        `${database}.${table}: ${rows.toLocaleString('en-US')} rows (${mix}) already built at ${k.built_at}; --force rebuilds`,
      );
      return { table, rows, mix, seconds: Number(k.build_seconds), reused: true };
    }
    const started = performance.now();
    await conn.query(`DROP TABLE IF EXISTS \`${table}\`, \`${table}_ddl_check\``);
    for (const statement of asyncTaskDdl(mysqlDialect, table)) await conn.query(statement);
    for (const statement of asyncTaskDdl(mysqlDialect, `${table}_ddl_check`)) await conn.query(statement);
    await conn.query(
      `ALTER TABLE \`${table}\` ${SECONDARY.map(([name]) => `DROP INDEX \`${name}\``).join(', ')}`,
    );
    await conn.query('SET @gen_now = NOW(), @gen_start = NOW() - INTERVAL ? DAY', [days]);
    await conn.query('SET SESSION unique_checks = 0, SESSION foreign_key_checks = 0');
    for (let from = 1; from <= rows; from += CHUNK) {
      const to = Math.min(rows, from + CHUNK - 1);
      await conn.query(`INSERT INTO \`${table}\` ${chunkSelect(from, to, rows, mix, days)}`);
      log(
        `${table}: ${to.toLocaleString('en-US')} / ${rows.toLocaleString('en-US')} rows (${((performance.now() - started) / 1000).toFixed(0)} s)`,
      );
    }
    log(`${table}: building indexes`);
    await conn.query(`ALTER TABLE \`${table}\` ${SECONDARY.map(([, add]) => add).join(', ')}`);
    const [want, got] = [await shapeOf(conn, `${table}_ddl_check`), await shapeOf(conn, table)];
    await conn.query(`DROP TABLE \`${table}_ddl_check\``);
    if (want !== got) throw new Error(`generated table differs from asyncTaskDdl:\n${got}\nvs\n${want}`);
    await conn.query(`ANALYZE TABLE \`${table}\``);
    if (business) await buildBusiness(conn, table, log);
    const seconds = (performance.now() - started) / 1000;
    await conn.query(
      'REPLACE INTO bench_dataset (table_name, row_count, mix, days, generator, business, built_at, build_seconds) VALUES (?, ?, ?, ?, ?, ?, NOW(), ?)',
      [table, rows, mix, days, GENERATOR_VERSION, business ? 1 : 0, seconds],
    );
    log(`${database}.${table}: ${rows.toLocaleString('en-US')} rows built in ${seconds.toFixed(1)} s`);
    return { table, rows, mix, seconds, reused: false };
  } finally {
    await conn.end();
  }
}

/** user_coupon rows for successful coupon tasks: ~0.1% missing, ~0.05% duplicated, a few orphans. */
async function buildBusiness(conn, table, log) {
  const business = `${table === 'async_task' ? '' : `${table}_`}user_coupon`;
  log(`${business}: building`);
  await conn.query(`DROP TABLE IF EXISTS \`${business}\``);
  await conn.query(`CREATE TABLE \`${business}\` (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  order_id VARCHAR(64) NOT NULL,
  user_id BIGINT NOT NULL,
  coupon_template_id VARCHAR(32) NOT NULL,
  event_id VARCHAR(64) NULL,
  created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  KEY idx_user_coupon_order (order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  const source = `SELECT biz_id, JSON_VALUE(payload, '$.userId') AS user_id, JSON_VALUE(payload, '$.templateId') AS tpl, event_id, updated_at
    FROM \`${table}\` WHERE biz_type = 'coupon' AND status = 2`;
  await conn.query(`INSERT INTO \`${business}\` (order_id, user_id, coupon_template_id, event_id, created_at)
    SELECT biz_id, user_id, tpl, event_id, updated_at FROM (${source}) s WHERE CRC32(event_id) % 1000 <> 0`);
  await conn.query(`INSERT INTO \`${business}\` (order_id, user_id, coupon_template_id, event_id, created_at)
    SELECT biz_id, user_id, tpl, event_id, updated_at + INTERVAL 3 SECOND FROM (${source}) s WHERE CRC32(event_id) % 2000 = 1`);
  await conn.query(`INSERT INTO \`${business}\` (order_id, user_id, coupon_template_id, event_id, created_at)
    SELECT CONCAT('ORD-ORPHAN-', seq), 10000 + seq, 'NEWUSER_5', NULL, NOW() - INTERVAL seq MINUTE FROM seq_1_to_50`);
  await conn.query(`ANALYZE TABLE \`${business}\``);
}

async function main() {
  const { values } = parseArgs({
    options: {
      rows: { type: 'string', default: '1000000' },
      table: { type: 'string', default: 'async_task' },
      database: { type: 'string', default: 'taskrecon_bench' },
      mix: { type: 'string', default: 'realistic' },
      days: { type: 'string', default: '14' },
      business: { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const rows = Number(values.rows.replace(/_/g, ''));
  if (!Number.isInteger(rows) || rows < 1)
    throw new Error(`--rows must be a positive integer, got ${values.rows}`);
  await generate({ ...values, rows, days: Number(values.days) });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
