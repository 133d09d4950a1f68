#!/usr/bin/env node
/**
 * Redis queue benchmarks (the performance targets): `taskrecon queues` on a queue holding 1M jobs in Laravel's key
 * layout (ready list, delayed and reserved sets) beside redis-cli sending the same counting commands
 * (SCAN, LLEN, ZCARD, ZCOUNT, the lowest score), at 100k and 1M jobs to show memory stays flat; and
 * `queues move` of ready jobs (each batch's write-ahead intent and audit rows included) beside
 * redis-benchmark pipelining the same LMOVE and redis-cli sending the same moves as Lua batches
 * (without intents or audit rows). Medians of N runs (3 by default),
 * taskrecon and its baselines interleaved, wall time from spawn to exit (start-up included) and peak
 * RSS of each child. Writes its section of bench/RESULTS.md.
 *
 *   npm run build && node bench/queues.js [--jobs 1000000] [--move 200000] [--runs 3] [--out FILE]
 *
 * Uses Redis DB index 12 on 127.0.0.1:6379 (its own key prefix, deleted before and after) and creates
 * and drops the MariaDB schema taskrecon_bench_queues for the move's audit rows.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes, randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { Redis } from 'ioredis';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin/run.js');
const DB_INDEX = 12;
const REDIS_URL = `redis://127.0.0.1:6379/${DB_INDEX}`;
const PREFIX = `bench_${randomBytes(3).toString('hex')}_`;
const SERVER = process.env.TASKRECON_BENCH_DB ?? 'mysql://root@127.0.0.1:3306';
const SCHEMA = 'taskrecon_bench_queues';
const TARGET = { inspectSeconds: 1, moveJobsPerSecond: 50_000 };

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const JOBS = Number(arg('jobs', 1_000_000));
const SMALL = Math.floor(JOBS / 10);
const MOVE = Number(arg('move', 200_000));
const RUNS = Number(arg('runs', 3));
const OUT = arg('out', join(ROOT, 'bench/RESULTS.md'));
/** taskrecon's default batch: one intent, one Lua script and one settlement (audit rows) per this many jobs. */
const BATCH = 1000;

const key = (queue, suffix = '') => `${PREFIX}queues:${queue}${suffix}`;
const redis = new Redis(REDIS_URL);

/** A Laravel 8 payload as RedisQueue::createPayload writes it. */
function payload(i) {
  const command = `O:20:"App\\Jobs\\IssueCoupon":3:{s:6:"userId";i:${i};s:6:"coupon";s:8:"NEWYEAR5";s:5:"queue";N;}`;
  return JSON.stringify({
    uuid: randomUUID(),
    displayName: 'App\\Jobs\\IssueCoupon',
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    maxTries: 3,
    maxExceptions: null,
    failOnTimeout: false,
    backoff: null,
    timeout: null,
    retryUntil: null,
    data: { commandName: 'App\\Jobs\\IssueCoupon', command },
    id: randomBytes(16).toString('hex'),
    attempts: 0,
  });
}

/** Deletes this run's keys (the DB index is shared with tests: never FLUSHDB). */
async function dropKeys() {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/** 60% ready, 30% delayed (half of them overdue), 10% reserved (half expired) in queue `default`. */
async function seed(total) {
  await dropKeys();
  const now = Math.floor(Date.now() / 1000);
  const ready = Math.floor(total * 0.6);
  const delayed = Math.floor(total * 0.3);
  for (let i = 0; i < total; i += 1000) {
    const pipe = redis.pipeline();
    const list = [];
    const late = [];
    const held = [];
    for (let j = i; j < Math.min(total, i + 1000); j++) {
      if (j < ready) list.push(payload(j));
      else if (j < ready + delayed) late.push(now + (j % 2 ? 3600 : -600) + (j % 100), payload(j));
      else held.push(now + (j % 2 ? 90 : -300) + (j % 100), payload(j));
    }
    if (list.length) pipe.rpush(key('default'), ...list);
    if (late.length) pipe.zadd(key('default', ':delayed'), ...late);
    if (held.length) pipe.zadd(key('default', ':reserved'), ...held);
    await pipe.exec();
  }
}

/** What redis-cli sends to count the same queue: the counting commands of `queues`, one connection. */
function countingCommands() {
  const now = Math.floor(Date.now() / 1000);
  return [
    `SCAN 0 MATCH *queues:* COUNT 1000`,
    `LLEN ${key('default')}`,
    `ZCARD ${key('default', ':delayed')}`,
    `ZCARD ${key('default', ':reserved')}`,
    `ZCOUNT ${key('default', ':delayed')} -inf ${now}`,
    `ZCOUNT ${key('default', ':reserved')} -inf ${now}`,
    `ZRANGE ${key('default', ':delayed')} 0 0 WITHSCORES`,
    `ZRANGE ${key('default', ':reserved')} 0 0 WITHSCORES`,
    `CONFIG GET appendonly`,
    `CONFIG GET maxmemory-policy`,
    '',
  ].join('\n');
}

/** The same moves as Lua batches: BATCH LMOVEs per EVAL, MOVE jobs in all. */
function luaBatches(from, to, count) {
  const script = `for i = 1, tonumber(ARGV[1]) do if not redis.call('lmove', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') then return i - 1 end end return tonumber(ARGV[1])`;
  const lines = [];
  for (let done = 0; done < count; done += BATCH)
    lines.push(`EVAL "${script}" 2 ${from} ${to} ${Math.min(BATCH, count - done)}`);
  return `${lines.join('\n')}\n`;
}

/** Puts moved jobs back at the head of `default`, in order, so every run starts from the same queue. */
async function moveBack() {
  const script = `local n = 0 while true do local m = redis.call('rpop', KEYS[1]) if not m then return n end redis.call('lpush', KEYS[2], m) n = n + 1 end`;
  await redis.eval(script, 2, key('default2'), key('default'));
}

/** Runs redis-cli with commands on stdin; measured like every other child. */
async function redisCli(input) {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-bench-queues-'));
  const file = join(dir, 'commands.txt');
  writeFileSync(file, input);
  return measure('sh', ['-c', `redis-cli -n ${DB_INDEX} < ${file}`]);
}

async function taskrecon(args, cwd) {
  const run = await measure(process.execPath, [BIN, ...args], { cwd });
  if (run.code !== 0 && run.code !== 1)
    throw new Error(`taskrecon ${args.join(' ')}: exit ${run.code}: ${run.stderr}`);
  return run;
}

function ensureOk(run, what) {
  if (run.code !== 0) throw new Error(`${what}: exit ${run.code}: ${run.stderr}`);
  return run;
}

const fmt = (seconds) => `${seconds.toFixed(3)} s`;
const mb = (value) => `${value.toFixed(0)} MB`;
const rate = (jobs, seconds) => `${Math.round(jobs / seconds).toLocaleString('en-US')} jobs/s`;

/** `queues` with the config's database (snapshots written there) and with no database at all. */
async function inspect(total, cwd, cwdNoDb) {
  await seed(total);
  const ours = [];
  const noDb = [];
  const cli = [];
  for (let i = 0; i < RUNS; i++) {
    cli.push(ensureOk(await redisCli(countingCommands()), 'redis-cli counts'));
    ours.push(await taskrecon(['queues', '--broker', 'bench', '--json'], cwd));
    noDb.push(await taskrecon(['queues', '--broker', 'bench', '--json'], cwdNoDb));
  }
  return {
    seconds: median(ours.map((r) => r.seconds)),
    rss: median(ours.map((r) => r.peakRssMb)),
    noDbSeconds: median(noDb.map((r) => r.seconds)),
    noDbRss: median(noDb.map((r) => r.peakRssMb)),
    cliSeconds: median(cli.map((r) => r.seconds)),
  };
}

async function move(cwd) {
  await seed(JOBS);
  const ours = [];
  const bench = [];
  const lua = [];
  const fixed = [];
  for (let i = 0; i < RUNS; i++) {
    const rb = await measure('redis-benchmark', [
      '-n',
      String(MOVE),
      '-c',
      '1',
      '-P',
      String(BATCH),
      '--dbnum',
      String(DB_INDEX),
      '-q',
      'LMOVE',
      key('default'),
      key('default2'),
      'LEFT',
      'RIGHT',
    ]);
    bench.push(ensureOk(rb, 'redis-benchmark LMOVE'));
    await moveBack();
    lua.push(
      ensureOk(await redisCli(luaBatches(key('default'), key('default2'), MOVE)), 'redis-cli Lua batches'),
    );
    await moveBack();
    const args = ['queues', 'move', '--broker', 'bench', '--from', 'default', '--to', 'default2'];
    const run = await taskrecon(
      [...args, '--what', 'ready', '--limit', String(MOVE), '--yes', '--reason', 'bench'],
      cwd,
    );
    ours.push(run);
    // The fixed cost of a run: start-up, connections, checks (a dry run of one job moves nothing).
    fixed.push(await taskrecon([...args, '--what', 'ready', '--limit', '1', '--dry-run'], cwd));
    const moved = await redis.llen(key('default2'));
    if (moved !== MOVE) throw new Error(`queues move moved ${moved} jobs, not ${MOVE}`);
    await moveBack();
  }
  return {
    seconds: median(ours.map((r) => r.seconds)),
    rss: median(ours.map((r) => r.peakRssMb)),
    benchSeconds: median(bench.map((r) => r.seconds)),
    luaSeconds: median(lua.map((r) => r.seconds)),
    fixedSeconds: median(fixed.map((r) => r.seconds)),
  };
}

async function main() {
  const admin = await mysql.createConnection({ uri: `${SERVER}/`, multipleStatements: true });
  await admin.query(`DROP DATABASE IF EXISTS ${SCHEMA}; CREATE DATABASE ${SCHEMA} CHARACTER SET utf8mb4`);
  const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bench-queues-'));
  const cwdNoDb = mkdtempSync(join(tmpdir(), 'taskrecon-bench-queues-'));
  const brokers = [
    'brokers:',
    '  bench:',
    '    kind: redis',
    `    url: ${REDIS_URL}`,
    '    framework: laravel',
    `    prefix: ${PREFIX}`,
    '    queues: [default, default2]',
    '    retryAfter: 90s',
    '',
  ];
  writeFileSync(join(cwd, 'taskrecon.config.yaml'), [`db: ${SERVER}/${SCHEMA}`, ...brokers].join('\n'));
  writeFileSync(join(cwdNoDb, 'taskrecon.config.yaml'), brokers.join('\n'));
  ensureOk(await measure(process.execPath, [BIN, 'init', '--audit-only'], { cwd }), 'init');
  const facts = machineFacts({ 'redis DB index': DB_INDEX, 'peak RSS': rssMethod });
  try {
    const small = await inspect(SMALL, cwd, cwdNoDb);
    const large = await inspect(JOBS, cwd, cwdNoDb);
    const moved = await move(cwd);
    const n = (x) => x.toLocaleString('en-US');
    const inspectRow = (jobs, r) => ({
      jobs: n(jobs),
      'queues (snapshots in MariaDB)': fmt(r.seconds),
      'its peak RSS': mb(r.rss),
      'queues (no database)': fmt(r.noDbSeconds),
      'peak RSS': mb(r.noDbRss),
      'redis-cli, same counts': fmt(r.cliSeconds),
    });
    const inspectRows = [inspectRow(SMALL, small), inspectRow(JOBS, large)];
    const moveRows = [
      {
        what: `taskrecon queues move --what ready --limit ${n(MOVE)} (batch ${BATCH}: intent, audit of every job)`,
        time: fmt(moved.seconds),
        rate: rate(MOVE, moved.seconds),
        'peak RSS': mb(moved.rss),
      },
      {
        what: 'the same, less its fixed cost (a dry run of one job: start-up, connections)',
        time: fmt(moved.seconds - moved.fixedSeconds),
        rate: rate(MOVE, moved.seconds - moved.fixedSeconds),
        'peak RSS': '',
      },
      {
        what: `redis-cli: EVAL of ${BATCH} LMOVEs per batch, no audit`,
        time: fmt(moved.luaSeconds),
        rate: rate(MOVE, moved.luaSeconds),
        'peak RSS': '',
      },
      {
        what: `redis-benchmark: LMOVE pipelined ${BATCH} deep, one client`,
        time: fmt(moved.benchSeconds),
        rate: rate(MOVE, moved.benchSeconds),
        'peak RSS': '',
      },
    ];
    const verdict = (ok) => (ok ? 'holds' : 'MISSED');
    const body = [
      '## Redis queues: queues on 1M jobs, queues move',
      '',
      `Laravel key layout under prefix \`${PREFIX}\` (60% ready, 30% delayed of which half overdue, 10% reserved of which half expired), realistic payloads (~560 bytes). Medians of ${RUNS} runs, wall time from spawn to exit including Node start-up, taskrecon and its baselines interleaved.`,
      '',
      facts,
      '',
      '### queues (read-only counts)',
      '',
      markdownTable(inspectRows),
      '',
      `Target ≤ ${TARGET.inspectSeconds} s on ${n(JOBS)} jobs: ${verdict(Math.max(large.seconds, large.noDbSeconds) <= TARGET.inspectSeconds)} (the slower of the two). Memory: peak RSS ${mb(small.rss)} at ${n(SMALL)} jobs, ${mb(large.rss)} at ${n(JOBS)} (counts and ZCOUNT only, payloads never read).`,
      '',
      '### queues move (ready list to another queue, atomic per batch)',
      '',
      markdownTable(moveRows),
      '',
      `Target ≥ ${n(TARGET.moveJobsPerSecond)} jobs/s: ${verdict(MOVE / moved.seconds >= TARGET.moveJobsPerSecond)} (start-up, each batch's write-ahead intent and audit in MariaDB included, one job-batch row naming its ${n(BATCH)} jobs; the baselines write neither; ${(moved.luaSeconds / moved.seconds).toFixed(3)}× the rate of the Lua batches of the same run). Peak RSS target < 150 MB: ${verdict(moved.rss < 150)}.`,
    ].join('\n');
    updateSection(OUT, 'queues', body);
    process.stdout.write(`${body}\n`);
  } finally {
    await dropKeys();
    redis.disconnect();
    await admin.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
    await admin.end();
  }
}

await main();
