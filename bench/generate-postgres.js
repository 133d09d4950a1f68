/**
 * The PostgreSQL side of bench/generate.js: the same mixes, biz types and error texts, built
 * server-side from generate_series (no row crosses the wire) into a table made with the DDL of
 * `taskrecon init` on PostgreSQL. Secondary indexes are built after the load; the table is then
 * VACUUM ANALYZEd (index-only scans need the visibility map). A table that already matches (rows,
 * mix, days, generator version) is kept.
 *
 * Only ever touches databases named taskrecon_bench*; only connects to 127.0.0.1.
 */
import pg from 'pg';
import { performance } from 'node:perf_hooks';
import { asyncTaskDdl } from '../dist/db/ddl.js';
import { postgresDialect } from '../dist/db/engines/postgres/dialect.js';
import { BIZ_TYPES, checkDatabaseName, ERRORS, MIXES } from './generate.js';

export const PG_SERVER = 'postgres://postgres@127.0.0.1:5432';
const CHUNK = 1_000_000;
/** Bumped whenever the generated data changes shape, so old tables are rebuilt. */
const GENERATOR_VERSION = 2;

/** A SQL string literal (the generator only quotes its own constants). */
const lit = (text) => `'${text.replace(/'/g, "''")}'`;

/** CASE over a per-mille bucket: [[value, weight], ...] with weights summing to `total`. */
function weighted(bucketSql, entries, total) {
  let at = 0;
  const whens = entries.map(([value, weight]) => {
    at += weight;
    return `WHEN ${bucketSql} < ${Math.round((at * 1000) / total)} THEN ${value}`;
  });
  return `CASE ${whens.slice(0, -1).join(' ')} ELSE ${entries[entries.length - 1][0]} END`;
}

/** Seconds as an interval expression. */
const secs = (sql) => `make_interval(secs => ${sql})`;

/** The SELECT that makes rows `from`..`to`, all times relative to `now` (a timestamptz literal). */
function chunkSelect(from, to, rows, mix, days, now) {
  const m = MIXES[mix];
  const kinds = Object.entries({
    success: m.success,
    compensated: m.compensated,
    failed: m.failed,
    due: m.due,
    notDue: m.notDue,
    stuck: m.stuck,
    inFlight: m.inFlight,
  }).map(([k, w]) => [lit(k), w]);
  const span = days * 86_400;
  const biz = weighted(
    'b',
    BIZ_TYPES.map(([name, w]) => [lit(name), w]),
    100,
  );
  const errors = `(ARRAY[${ERRORS.map(lit).join(', ')}])[1 + e % ${ERRORS.length}]`;
  const genNow = `${lit(now)}::timestamptz`;
  // h, g, e: independent pseudo-random values per row (hashint8, made non-negative); k: the row's kind; c: created_at.
  return `
SELECT id, biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at FROM (
  SELECT s AS id, biz AS biz_type,
         CASE biz WHEN 'sms' THEN 'MSG' WHEN 'refund' THEN 'RF' WHEN 'email' THEN 'ML' ELSE 'ORD' END
           || to_char(c, 'YYYYMMDD') || lpad(s::text, 10, '0') AS biz_id,
         biz || '-' || lpad(to_hex(h), 8, '0') || '-' || lpad(s::text, 10, '0') AS event_id,
         (CASE biz
           WHEN 'coupon' THEN '{"userId":' || (10000 + g % 900000) || ',"templateId":"NEWUSER_' || (5 * (1 + e % 20)) || '","orderNo":"ORD' || lpad(s::text, 10, '0') || '"}'
           WHEN 'points' THEN '{"userId":' || (10000 + g % 900000) || ',"points":' || (10 * (1 + e % 50)) || ',"reason":"order_paid"}'
           WHEN 'sms' THEN '{"phone":"138' || lpad((g % 100000000)::text, 8, '0') || '","template":"ORDER_PAID","params":{"amount":"' || (e % 500) || '.00"}}'
           WHEN 'refund' THEN '{"orderNo":"ORD' || lpad(s::text, 10, '0') || '","amount":"' || (e % 900) || '.' || lpad((g % 100)::text, 2, '0') || '","channel":"alipay"}'
           ELSE '{"ref":"' || lpad(s::text, 10, '0') || '","attempt":1}'
         END)::jsonb AS payload,
         CASE k WHEN 'success' THEN 2 WHEN 'compensated' THEN 4 WHEN 'failed' THEN 3 WHEN 'stuck' THEN 1 WHEN 'inFlight' THEN 1 ELSE 0 END AS status,
         CASE k WHEN 'success' THEN CASE WHEN e % 10 < 8 THEN 0 ELSE 1 + e % 2 END WHEN 'compensated' THEN 5 WHEN 'failed' THEN 5
                WHEN 'due' THEN e % 5 WHEN 'notDue' THEN 1 + e % 4 ELSE e % 3 END AS retry_count,
         CASE k
           WHEN 'due' THEN LEAST(${genNow}, c + ${secs('60 * power(2, e % 5) + g % 60')})
           WHEN 'notDue' THEN ${genNow} + ${secs('86400 + g % (7 * 86400)')}
           WHEN 'success' THEN c
           ELSE c + ${secs('60 * power(2, e % 5)')}
         END AS next_retry_time,
         CASE WHEN k IN ('failed', 'compensated', 'notDue') OR (k = 'due' AND e % 5 > 0) OR (k = 'success' AND e % 10 >= 8)
              THEN ${errors} END AS last_error,
         c AS created_at,
         CASE k
           WHEN 'success' THEN c + ${secs('g % 30')}
           WHEN 'stuck' THEN LEAST(${genNow} - interval '1 hour', c + ${secs('g % 600')})
           WHEN 'inFlight' THEN ${genNow} - ${secs('g % 300')}
           WHEN 'due' THEN LEAST(${genNow}, c + ${secs('g % 60')})
           ELSE c + ${secs('60 + g % 7200')}
         END AS updated_at
    FROM (
      SELECT s, h, g, e, ${biz} AS biz, ${weighted('p', kinds, 1000)} AS k,
             ${genNow} - interval '${days} days' + ${secs(`floor((s - 1)::numeric * ${span} / ${rows})`)} AS c
        FROM (SELECT s, abs(hashint8(s)::bigint) AS h, abs(hashint8(s + 1234567)::bigint) AS g,
                     abs(hashint8(s * 7 + 89)::bigint) AS e, abs(hashint8(s * 13 + 5)::bigint) % 1000 AS b,
                     abs(hashint8(s * 31 + 17)::bigint) % 1000 AS p
                FROM generate_series(${from}::bigint, ${to}::bigint) s) r
    ) q
) t`;
}

async function withClient(database, fn) {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/${database}` });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates the bench database when it is missing. */
export async function ensureDatabase(database) {
  checkDatabaseName(database);
  await withClient('postgres', async (c) => {
    const { rows } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (rows.length === 0) await c.query(`CREATE DATABASE ${database}`);
  });
}

/** Builds (or keeps, when it already matches) one dataset. Returns {table, rows, mix, seconds, reused}. */
export async function generatePostgres({
  rows,
  table = 'async_task',
  database = 'taskrecon_bench',
  mix = 'realistic',
  days = 14,
  force = false,
  log = console.error,
}) {
  if (!MIXES[mix]) throw new Error(`unknown mix ${mix} (${Object.keys(MIXES).join(', ')})`);
  if (!/^[a-z0-9_]+$/.test(table)) throw new Error(`bad table name ${table}`);
  await ensureDatabase(database);
  return withClient(database, async (c) => {
    await c.query(`CREATE TABLE IF NOT EXISTS bench_dataset (table_name TEXT PRIMARY KEY, row_count BIGINT NOT NULL,
      mix TEXT NOT NULL, days INT NOT NULL, generator INT NOT NULL, built_at TIMESTAMPTZ NOT NULL, build_seconds DOUBLE PRECISION NOT NULL)`);
    const known = (await c.query('SELECT * FROM bench_dataset WHERE table_name = $1', [table])).rows[0];
    const exists = (await c.query('SELECT to_regclass($1) AS t', [table])).rows[0].t !== null;
    if (
      !force &&
      exists &&
      known &&
      Number(known.row_count) === rows &&
      known.mix === mix &&
      known.days === days &&
      known.generator === GENERATOR_VERSION
    ) {
      log(
        `${database}.${table}: ${rows.toLocaleString('en-US')} rows (${mix}) already built at ${known.built_at.toISOString()}`,
      );
      return { table, rows, mix, seconds: Number(known.build_seconds), reused: true };
    }
    const started = performance.now();
    await c.query(`DROP TABLE IF EXISTS ${table}`);
    const ddl = asyncTaskDdl(postgresDialect, table);
    const [create, ...rest] = ddl;
    await c.query(create);
    const now = (await c.query("SELECT date_trunc('second', now())::text AS n")).rows[0].n;
    for (let from = 1; from <= rows; from += CHUNK) {
      const to = Math.min(rows, from + CHUNK - 1);
      await c.query(`INSERT INTO ${table} ${chunkSelect(from, to, rows, mix, days, now)}`);
      log(
        `${table}: ${to.toLocaleString('en-US')} / ${rows.toLocaleString('en-US')} rows (${((performance.now() - started) / 1000).toFixed(0)} s)`,
      );
    }
    log(`${table}: building indexes`);
    for (const statement of rest) await c.query(statement);
    await c.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), ${rows})`);
    await c.query(`VACUUM (ANALYZE) ${table}`);
    const seconds = (performance.now() - started) / 1000;
    await c.query(
      `INSERT INTO bench_dataset VALUES ($1, $2, $3, $4, $5, now(), $6)
       ON CONFLICT (table_name) DO UPDATE SET row_count = $2, mix = $3, days = $4, generator = $5, built_at = now(), build_seconds = $6`,
      [table, rows, mix, days, GENERATOR_VERSION, seconds],
    );
    log(`${database}.${table}: ${rows.toLocaleString('en-US')} rows built in ${seconds.toFixed(1)} s`);
    return { table, rows, mix, seconds, reused: false };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [rows, table, mix] = process.argv.slice(2);
  generatePostgres({ rows: Number(rows), table, mix }).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
