#!/usr/bin/env node
/**
 * The JSON contract check: runs every command with --json on the demo sandbox (SQLite) and on the
 * same rows copied into MariaDB (plus a Laravel failed_jobs table), and writes each output
 * normalised (times, durations, run ids and temporary paths dropped) to one file per run. Run it
 * on two builds and compare the folders to show a change kept the JSON as it was.
 *
 *   node bench/json-contract.js --out /tmp/json-now                  # this checkout's build
 *   node bench/json-contract.js --root /tmp/old-checkout --out /tmp/json-old
 *   node bench/json-contract.js --compare /tmp/json-old /tmp/json-now  # exit 1 when they differ
 *
 * Needs a build (npm run build:dev) in each root and MariaDB on 127.0.0.1:3306 (root, no password).
 */
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = join(dirname(fileURLToPath(import.meta.url)), '..');
const SERVER = process.env.TASKRECON_TEST_DB ?? 'mysql://root@127.0.0.1:3306/test';

const { values, positionals } = parseArgs({
  options: {
    root: { type: 'string', default: HERE },
    out: { type: 'string' },
    compare: { type: 'boolean' },
    tasks: { type: 'string', default: '1500' },
  },
  allowPositionals: true,
  strict: false,
});

/** Keys whose values change from run to run: they are replaced by their type. */
const VOLATILE =
  /(^|_)(at|time|now|started|finished|elapsed|duration|took|ms|seconds|age|ageSeconds|runId|run_id|pid|host|operator|file|configFile|sandboxFile|path)$|At$|Ms$|Seconds$|Time$|Epoch$|^(generatedAt|startedAt|finishedAt|durationMs|elapsedMs|tookMs|now|runId|operator|file|configFile|sandboxFile|command|nextRetryTime|nextRetryAt|updatedAt|createdAt|failedAt|lastAt|oldest|newest|age|since|until|window)$/i;

function normalise(value, key = '') {
  if (Array.isArray(value)) return value.map((v) => normalise(v, key));
  if (value && typeof value === 'object') {
    const out = {};
    for (const k of Object.keys(value).sort()) out[k] = normalise(value[k], k);
    // A breach of an age threshold carries the age, which grows while the suite runs.
    if (typeof value.metric === 'string' && /oldest|age|latency/i.test(value.metric) && 'value' in out)
      out.value = '<age>';
    return out;
  }
  if (VOLATILE.test(key) && value !== null) return `<${typeof value}>`;
  // EXPLAIN's row estimates move with the engine's statistics.
  if ((key === 'rows' || key === 'filtered') && typeof value === 'string') return '<estimate>';
  if (typeof value === 'string') {
    return value
      .replace(/\/tmp\/[\w./-]+/g, '<tmp>')
      .replace(/\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?/g, '<time>')
      .replace(/\b\d+(\.\d+)?\s?(ms|s|m|min|h|d)\b/g, '<dur>')
      .replace(/[+-]<dur>/g, '±<dur>')
      .replace(/(<dur> ?)+/g, '<dur> ')
      .replace(/tr_json_[0-9a-f]+/g, '<schema>')
      .replace(/\b1[7-9]\d{8}\b/g, '<epoch>')
      .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
      .replace(/drill-[0-9a-f]{8}/g, 'drill-<run>');
  }
  return value;
}

function compare(before, after) {
  const names = new Set([...readdirSync(before), ...readdirSync(after)]);
  let differ = 0;
  for (const name of [...names].sort()) {
    let a = '';
    let b = '';
    try {
      a = readFileSync(join(before, name), 'utf8');
    } catch {
      a = '(missing)';
    }
    try {
      b = readFileSync(join(after, name), 'utf8');
    } catch {
      b = '(missing)';
    }
    if (a !== b) {
      differ++;
      console.log(`DIFFERS ${name}`);
    }
  }
  console.log(`${names.size} outputs compared, ${differ} differ`);
  process.exit(differ ? 1 : 0);
}

if (values.compare) compare(positionals[0], positionals[1]);

const root = resolve(values.root);
const outDir = resolve(values.out ?? join(tmpdir(), 'taskrecon-json'));
mkdirSync(outDir, { recursive: true });
const work = mkdtempSync(join(tmpdir(), 'taskrecon-jsoncontract-'));
const bin = join(root, 'bin', 'run.js');

function run(name, args, options = {}) {
  const result = spawnSync(process.execPath, [bin, ...args, ...(options.ndjson ? [] : ['--json'])], {
    cwd: work,
    env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '', TZ: 'UTC' },
    encoding: 'utf8',
    timeout: 180_000,
  });
  let json;
  try {
    json = options.ndjson
      ? result.stdout
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line))
      : JSON.parse(result.stdout);
  } catch {
    json = { notJson: result.stdout.slice(0, 2000) };
  }
  const doc = { exit: result.status, json: normalise(json) };
  writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`${name}: exit ${result.status}`);
  return json;
}

/** The commands that only read, then the writes, then the reads again (they see the writes). */
function suite(prefix, config) {
  const c = ['--config', config];
  run(`${prefix}-scan`, ['scan', '--limit', '5', ...c]);
  run(`${prefix}-scan-ndjson`, ['scan', '--format', 'ndjson', '--limit', '0', '--biz-type', 'sms', ...c], {
    ndjson: true,
  });
  run(`${prefix}-scan-coupon-failed`, [
    'scan',
    '--biz-type',
    'coupon',
    '--status',
    'failed',
    '--limit',
    '3',
    ...c,
  ]);
  run(`${prefix}-show`, ['show', '1', ...c]);
  run(`${prefix}-doctor`, ['doctor', ...c]);
  run(`${prefix}-diff`, ['diff', '--samples', '3', ...c]);
  run(`${prefix}-diff-rule`, ['diff', '--rule', 'points-applied', '--samples', '5', ...c]);
  run(`${prefix}-report`, ['report', '--window', '1h', ...c]);
  run(`${prefix}-report-24h`, ['report', '--window', '24h', ...c]);
  run(`${prefix}-audit-empty`, ['audit', '--limit', '5', ...c]);
  run(`${prefix}-redrive-dry`, ['redrive', '--dry-run', ...c]);
  run(`${prefix}-compensate-dry`, [
    'compensate',
    '--action',
    'retry',
    '--biz-type',
    'coupon',
    '--error-like',
    'timed out',
    '--dry-run',
    ...c,
  ]);
  run(`${prefix}-compensate-retry`, [
    'compensate',
    '--action',
    'retry',
    '--biz-type',
    'coupon',
    '--error-like',
    'timed out',
    '--limit',
    '3',
    '--reason',
    'coupon service is back',
    '--operator',
    'contract',
    '--yes',
    ...c,
  ]);
  run(`${prefix}-compensate-ids`, [
    'compensate',
    '2',
    '3',
    '--action',
    'mark-compensated',
    '--reason',
    'by id',
    '--operator',
    'contract',
    '--yes',
    ...c,
  ]);
  run(`${prefix}-redrive`, ['redrive', '--batch', '100', '--pause', '0ms', '--max-tasks', '300', ...c]);
  run(`${prefix}-audit`, ['audit', '--limit', '5', ...c]);
  run(`${prefix}-diff-enqueue-dry`, ['diff', '--enqueue', '--dry-run', '--rule', 'coupon-applied', ...c]);
  run(`${prefix}-scan-after`, ['scan', '--limit', '3', ...c]);
  run(`${prefix}-diff-ndjson`, ['diff', '--format', 'ndjson', ...c], { ndjson: true });
  run(`${prefix}-bad-input`, ['scan', '--limit', 'lots', ...c]);
}

function copySandboxToMariaDb(sqliteFile, conn) {
  const lite = new Database(sqliteFile, { readonly: true });
  return (async () => {
    for (const table of ['async_task', 'user_coupon', 'user_points', 'sms_log']) {
      const rows = lite.prepare(`SELECT * FROM ${table} ORDER BY id`).all();
      if (!rows.length) continue;
      const cols = Object.keys(rows[0]);
      for (let i = 0; i < rows.length; i += 500) {
        const chunk = rows.slice(i, i + 500);
        await conn.query(`INSERT INTO \`${table}\` (${cols.map((k) => `\`${k}\``).join(', ')}) VALUES ?`, [
          chunk.map((r) => cols.map((k) => r[k])),
        ]);
      }
    }
    lite.close();
  })();
}

const BUSINESS_DDL = `
CREATE TABLE user_coupon (id BIGINT PRIMARY KEY AUTO_INCREMENT, order_id VARCHAR(64) NOT NULL, user_id INT NOT NULL,
  coupon_template_id VARCHAR(32) NOT NULL, event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, KEY (order_id));
CREATE TABLE user_points (id BIGINT PRIMARY KEY AUTO_INCREMENT, order_id VARCHAR(64) NOT NULL, user_id INT NOT NULL,
  points INT NOT NULL, event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, KEY (order_id));
CREATE TABLE sms_log (id BIGINT PRIMARY KEY AUTO_INCREMENT, order_id VARCHAR(64) NOT NULL, phone VARCHAR(20) NOT NULL,
  event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, KEY (order_id));
CREATE TABLE taskrecon_demo_meta (built_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, tasks INT NOT NULL);`;

async function main() {
  // 1. The demo sandbox (SQLite).
  const sandbox = join(work, 'sandbox.sqlite');
  run('sqlite-demo-build', ['demo', '--file', sandbox, '--tasks', values.tasks, '--no-tour']);
  const sqliteConfig = join(work, 'sandbox.config.yaml');
  // A copy of the untouched sandbox for MariaDB, before the suite writes to it.
  const pristine = join(work, 'pristine.sqlite');
  writeFileSync(pristine, readFileSync(sandbox));
  suite('sqlite', sqliteConfig);
  run('sqlite-drill', ['drill']);
  run('sqlite-init-print', ['init', '--print', '--dialect', 'sqlite']);

  // 2. The same rows on MariaDB, and a Laravel failed_jobs table.
  const name = `tr_json_${Math.random().toString(16).slice(2, 8)}`;
  const admin = await mysql.createConnection({ uri: SERVER, multipleStatements: true });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  const url = new URL(SERVER);
  url.pathname = `/${name}`;
  const dsn = url.toString();
  try {
    run('mysql-init', ['init', '--db', dsn]);
    const conn = await mysql.createConnection({ uri: dsn, multipleStatements: true, timezone: 'Z' });
    await conn.query("SET time_zone = '+00:00'");
    await conn.query(BUSINESS_DDL);
    await copySandboxToMariaDb(pristine, conn);
    await conn.query(readFileSync(join(HERE, 'fixtures', 'schemas', 'laravel_failed_jobs.sql'), 'utf8'));
    await conn.query(
      `INSERT INTO failed_jobs (uuid, connection, queue, payload, exception, failed_at)
       SELECT CONCAT('uuid-', seq), 'redis', IF(seq % 3 = 0, 'mail', 'default'),
              CONCAT('{"displayName":"App\\\\\\\\Jobs\\\\\\\\Job', seq % 4, '","job":"Illuminate\\\\\\\\Queue\\\\\\\\CallQueuedHandler@call","data":{}}'),
              CONCAT('RuntimeException: boom ', seq % 5, ' in /app/Job.php:12'), '2026-11-30 10:00:00'
       FROM seq_1_to_40`,
    );
    await conn.end();
    const mysqlConfig = join(work, 'mysql.config.yaml');
    writeFileSync(
      mysqlConfig,
      readFileSync(sqliteConfig, 'utf8')
        .replace(/^db: .*$/m, `db: ${dsn}`)
        .replace(
          /^sources:\n/m,
          'sources:\n  contract-failed: { profile: laravel-failed-jobs, table: failed_jobs }\n',
        ),
    );
    suite('mysql', mysqlConfig);
    const f = ['--config', mysqlConfig, '--source', 'contract-failed'];
    run('mysql-failed-scan', ['scan', '--limit', '5', ...f]);
    run('mysql-failed-report', ['report', '--window', '24h', ...f]);
    run('mysql-failed-doctor', ['doctor', ...f]);
    run('mysql-failed-show', ['show', '7', ...f]);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await admin.end();
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`wrote ${readdirSync(outDir).length} outputs to ${outDir}`);
}

await main();
