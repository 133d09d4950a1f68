#!/usr/bin/env node
/**
 * Which PostgreSQL driver for taskrecon: node-postgres (`pg` with `pg-cursor`) against postgres.js
 * (`postgres`, its cursor), each streaming the same statement as NDJSON task lines, beside `psql`
 * streaming it with `COPY (…) TO STDOUT`. Seeds ROWS classic task rows (timestamptz columns) in a
 * throw-away database on the local PostgreSQL (postgres@127.0.0.1:5432, trust), warms it, runs the
 * three interleaved RUNS times, drops the database and writes the section `bench:pg-drivers` of
 * bench/RESULTS.md (median wall time, peak RSS).
 *
 *   node bench/pg-drivers.js [--rows 400000] [--runs 3]
 */
import pg from 'pg';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const DB = 'taskrecon_bench_pgdrivers';
const SERVER = 'postgres://postgres@127.0.0.1:5432';
const { values } = parseArgs({
  options: { rows: { type: 'string', default: '400000' }, runs: { type: 'string', default: '3' } },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);

async function withClient(database, fn) {
  const client = new pg.Client({ connectionString: `${SERVER}/${database}` });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function seed() {
  await withClient('postgres', async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${DB}`);
    await c.query(`CREATE DATABASE ${DB}`);
  });
  await withClient(DB, async (c) => {
    await c.query(`CREATE TABLE async_task (
      id BIGSERIAL PRIMARY KEY, biz_type VARCHAR(32) NOT NULL, biz_id VARCHAR(64) NOT NULL,
      event_id VARCHAR(64) NOT NULL UNIQUE, payload JSONB, status SMALLINT NOT NULL DEFAULT 0,
      retry_count INT NOT NULL DEFAULT 0, next_retry_time TIMESTAMPTZ NOT NULL DEFAULT now(),
      last_error VARCHAR(512), created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
      updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
    await c.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, last_error, created_at, updated_at)
       SELECT 'coupon', 'ORD' || lpad(s::text, 10, '0'), 'evt-' || s, '{"user_id":1}',
              CASE WHEN s % 97 = 0 THEN 3 ELSE 2 END, CASE WHEN s % 97 = 0 THEN 8 ELSE 0 END,
              CASE WHEN s % 97 = 0 THEN 'timed out' END,
              now() - (s % 86400) * interval '1 second', now() - (s % 3600) * interval '1 second'
       FROM generate_series(1, $1) s`,
      [ROWS],
    );
    await c.query('VACUUM ANALYZE async_task');
  });
}

async function main() {
  const statement = `SELECT id, biz_type, biz_id, event_id, status, retry_count, EXTRACT(EPOCH FROM next_retry_time)::bigint, last_error, EXTRACT(EPOCH FROM created_at)::bigint, EXTRACT(EPOCH FROM updated_at)::bigint FROM async_task ORDER BY id`;
  const dsn = `${SERVER}/${DB}`;
  const cases = [
    {
      name: 'psql COPY (…) TO STDOUT (baseline)',
      command: 'psql',
      args: [dsn, '-q', '-c', `COPY (${statement}) TO STDOUT`],
    },
    {
      name: 'node-postgres (pg 8.23.1 + pg-cursor 2.22.1)',
      command: process.execPath,
      args: [join(HERE, 'pg-driver-child.js'), 'pg', dsn, statement],
    },
    {
      name: 'postgres.js (postgres 4.2.0, cursor)',
      command: process.execPath,
      args: [join(HERE, 'pg-driver-child.js'), 'postgres', dsn, statement],
    },
  ];
  const facts = machineFacts({ rows: ROWS, runs: RUNS });
  await seed();
  try {
    // Warm: one unmeasured pass of each, so the table is in shared buffers and the OS cache.
    for (const c of cases) await measure(c.command, c.args);
    const times = cases.map(() => []);
    const rss = cases.map(() => []);
    for (let run = 0; run < RUNS; run++) {
      for (const [i, c] of cases.entries()) {
        const result = await measure(c.command, c.args);
        if (result.code !== 0) throw new Error(`${c.name} exited ${result.code}: ${result.stderr}`);
        times[i].push(result.seconds);
        rss[i].push(result.peakRssMb);
      }
    }
    // Both drivers must write the same bytes: the same rows, the same encoding.
    const outputs = ['pg', 'postgres'].map((driver) =>
      spawnSync(process.execPath, [join(HERE, 'pg-driver-child.js'), driver, dsn, statement], {
        maxBuffer: 1 << 30,
      }).stdout.toString(),
    );
    if (outputs[0] !== outputs[1]) throw new Error('the two drivers wrote different NDJSON');
    const lines = outputs[0].split('\n').length - 1;
    if (lines !== ROWS) throw new Error(`${lines} NDJSON lines for ${ROWS} rows`);
    const base = median(times[0]);
    const table = markdownTable(
      cases.map((c, i) => {
        const t = median(times[i]);
        return {
          reader: c.name,
          median: `${t.toFixed(2)} s`,
          'speed vs psql': `${(base / t).toFixed(2)}×`,
          rate: `${Math.round(ROWS / t).toLocaleString('en-US')} rows/s`,
          'peak RSS': `${median(rss[i]).toFixed(0)} MB`,
          'each run': times[i].map((x) => x.toFixed(2)).join(' '),
        };
      }),
    );
    const body = `## PostgreSQL drivers: ${ROWS.toLocaleString('en-US')} task rows as NDJSON, against psql COPY

Each driver streams the same statement (every task column, times as epoch seconds, in id order)
in batches of 2,000 through its cursor and writes each row as an NDJSON task line, as \`scan
--format ndjson\` does (both write the same ${lines.toLocaleString('en-US')} lines, byte for byte); \`psql\` streams that statement with \`COPY (…) TO
STDOUT\`, which encodes nothing. Warm (one unmeasured pass first; the table fits shared buffers),
interleaved, median of ${RUNS}; peak RSS by ${rssMethod}. "Speed vs psql" is psql's time over the reader's (1.00× = as fast).

${table}

${facts}

Re-run: \`node bench/pg-drivers.js --rows ${ROWS} --runs ${RUNS}\`.`;
    updateSection(join(HERE, 'RESULTS.md'), 'pg-drivers', body);
    process.stdout.write(body + '\n');
  } finally {
    await withClient('postgres', (c) => c.query(`DROP DATABASE IF EXISTS ${DB}`));
  }
}

await main();
