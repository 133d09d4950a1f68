#!/usr/bin/env node
/**
 * diff, scan and redrive on two builds in the same run: the commit before the one-folder-per-verb
 * move and this checkout, interleaved, medians of N, on bounded tables of the local MariaDB
 * (root@127.0.0.1:3306, schema taskrecon_bench_layout, created and dropped here). Writes the
 * section `bench:layout` of bench/RESULTS.md.
 *
 *   git worktree add /tmp/before <commit> && (cd /tmp/before && npm run build:dev)
 *   npm run build:dev && node bench/layout-compare.js --before /tmp/before [--after DIR] [--rows 200000] [--runs 3]
 */
import mysql from 'mysql2/promise';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { measure, median } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCHEMA = 'taskrecon_bench_layout';
const DSN = `mysql://root@127.0.0.1:3306/${SCHEMA}`;

const { values } = parseArgs({
  options: {
    before: { type: 'string' },
    'before-label': { type: 'string', default: 'before the move' },
    after: { type: 'string', default: ROOT },
    'after-label': { type: 'string', default: 'after the move (this checkout)' },
    rows: { type: 'string', default: '200000' },
    'redrive-tasks': { type: 'string', default: '20000' },
    runs: { type: 'string', default: '3' },
    section: { type: 'string', default: 'layout' },
    title: { type: 'string', default: 'The one-folder-per-verb move' },
    change: { type: 'string', default: 'the move changed where code lives, not what it does' },
    out: { type: 'string', default: join(ROOT, 'bench', 'RESULTS.md') },
  },
});
if (!values.before) throw new Error('--before DIR: a checkout of the old commit, built');
const ROWS = Number(values.rows);
const REDRIVE = Number(values['redrive-tasks']);
const RUNS = Number(values.runs);
const BUILDS = [
  { label: values['before-label'], root: resolve(values.before) },
  { label: values['after-label'], root: resolve(values.after) },
];

async function seed(admin) {
  await admin.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
  await admin.query(`CREATE DATABASE ${SCHEMA} CHARACTER SET utf8mb4`);
  await admin.query(`USE ${SCHEMA}`);
  await admin.query(`CREATE TABLE async_task (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, biz_type VARCHAR(32) NOT NULL, biz_id VARCHAR(64) NOT NULL,
    event_id VARCHAR(64) NOT NULL, payload JSON NULL, status TINYINT NOT NULL DEFAULT 0, retry_count INT NOT NULL DEFAULT 0,
    next_retry_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, last_error VARCHAR(512) NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (id), UNIQUE KEY uk_event_id (event_id), KEY idx_status_next_retry (status, next_retry_time),
    KEY idx_biz (biz_type, biz_id)) ENGINE=InnoDB`);
  await admin.query(`CREATE TABLE user_coupon (id BIGINT PRIMARY KEY AUTO_INCREMENT, order_id VARCHAR(64) NOT NULL,
    user_id INT NOT NULL, KEY idx_order (order_id)) ENGINE=InnoDB`);
  // Success tasks, a few failed ones; one business row per success task but every 1000th.
  await admin.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, last_error, created_at, updated_at)
     SELECT 'coupon', CONCAT('ORD', LPAD(seq, 10, '0')), CONCAT('evt-', seq), '{"user_id":1}',
            IF(seq % 97 = 0, 3, 2), IF(seq % 97 = 0, 8, 0), IF(seq % 97 = 0, 'timed out', NULL),
            NOW() - INTERVAL (seq % 86400) SECOND, NOW() - INTERVAL (seq % 3600) SECOND
     FROM seq_1_to_${ROWS}`,
  );
  await admin.query(
    `INSERT INTO user_coupon (order_id, user_id) SELECT CONCAT('ORD', LPAD(seq, 10, '0')), 1
     FROM seq_1_to_${ROWS} WHERE seq % 97 <> 0 AND seq % 1000 <> 0`,
  );
}

/** A fresh due backlog for redrive: REDRIVE pending tasks of biz type `noop`, due now. */
async function seedDue(admin) {
  await admin.query(`DELETE FROM ${SCHEMA}.async_task WHERE biz_type = 'noop'`);
  await admin.query(
    `INSERT INTO ${SCHEMA}.async_task (biz_type, biz_id, event_id, status, next_retry_time)
     SELECT 'noop', CONCAT('N', seq), CONCAT('noop-', seq, '-', UUID_SHORT()), 0, NOW() - INTERVAL 1 MINUTE
     FROM seq_1_to_${REDRIVE}`,
  );
}

const CONFIG = `db: ${DSN}
sources:
  tasks: { profile: async-task, table: async_task, default: true }
handlers:
  default: { type: mark-only }
rules:
  - { name: coupon-applied, bizType: coupon, taskStatus: [success], business: { table: user_coupon, key: order_id, expect: exactly-one } }
  # The same tables through another spelling of the DSN: diff takes them as two servers (checksum levels).
  - { name: coupon-cross, bizType: coupon, taskStatus: [success], business: { table: user_coupon, key: order_id, expect: exactly-one, db: "mysql://root:@127.0.0.1:3306/${SCHEMA}" } }
`;

const CASES = [
  { name: 'diff (same server, merge walk)', args: ['diff', '--rule', 'coupon-applied', '--json'] },
  {
    name: 'diff --walk join (same server, chunked anti-joins)',
    args: ['diff', '--rule', 'coupon-applied', '--walk', 'join', '--json'],
  },
  { name: 'diff (across servers, checksum levels)', args: ['diff', '--rule', 'coupon-cross', '--json'] },
  {
    name: 'scan --format ndjson --limit 0 --status failed',
    args: ['scan', '--format', 'ndjson', '--limit', '0', '--status', 'failed'],
  },
  { name: 'scan (counts and lists)', args: ['scan', '--json'] },
  {
    name: `redrive ${REDRIVE.toLocaleString('en-US')} due tasks (mark-only)`,
    args: ['redrive', '--biz-type', 'noop', '--batch', '500', '--pause', '0ms', '--json'],
    before: seedDue,
  },
];

async function main() {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-layout-'));
  const config = join(dir, 'taskrecon.yaml');
  writeFileSync(config, CONFIG);
  const admin = await mysql.createConnection({
    uri: 'mysql://root@127.0.0.1:3306/',
    multipleStatements: true,
  });
  const facts = machineFacts({ rows: ROWS, runs: RUNS });
  try {
    await seed(admin);
    const rows = [];
    for (const c of CASES) {
      const times = BUILDS.map(() => []);
      for (let run = 0; run < RUNS; run++) {
        for (const [i, build] of BUILDS.entries()) {
          if (c.before) await c.before(admin);
          const result = await measure(
            process.execPath,
            [join(build.root, 'bin', 'run.js'), ...c.args, '--config', config],
            {
              env: { NO_COLOR: '1', TASKRECON_DB: '' },
            },
          );
          if (![0, 1].includes(result.code))
            throw new Error(`${c.name} (${build.label}) exited ${result.code}: ${result.stderr}`);
          times[i].push(result.seconds);
        }
      }
      const [before, after] = times.map(median);
      rows.push({
        command: c.name,
        before: `${before.toFixed(2)} s`,
        after: `${after.toFixed(2)} s`,
        change: `${(((after - before) / before) * 100).toFixed(1)}%`,
        'each run (before / after)': times.map((t) => t.map((x) => x.toFixed(2)).join(' ')).join(' / '),
      });
      console.log(Object.values(rows.at(-1)).join(' | '));
    }
    const body = `## ${values.title}: diff, scan and redrive before and after (${ROWS.toLocaleString('en-US')} rows)

Both builds in the same run, interleaved, median wall time of ${RUNS} runs (start-up included), on
${ROWS.toLocaleString('en-US')} async_task rows and their coupon rows on the local MariaDB (one
missing effect in 1,000, a failed task in 97). "Before" is ${BUILDS[0].label}, "after" is
${BUILDS[1].label}; ${values.change},
so the two should agree within noise. Each
run's time is listed too: on a shared machine the runs of one build overlap the other's.

${markdownTable(rows)}

${facts}

Re-run: \`node bench/layout-compare.js --before <checkout of the old commit, built> --section ${values.section}\`.`;
    updateSection(values.out, values.section, body);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
    await admin.end();
  }
}

await main();
