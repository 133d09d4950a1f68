#!/usr/bin/env node
/**
 * RabbitMQ benchmarks: `taskrecon queues move` of parked messages (a consumer's prefetch window,
 * publisher confirms, an intent per batch, one job-batch audit row per batch, acks after the
 * confirms) beside a bare amqplib mover that consumes with prefetch 500, publishes with confirms
 * and acks each message on its confirm, without an audit; and `taskrecon queues` on a vhost of
 * many queues beside curl fetching the management API's queue list. Medians of N runs (3 by
 * default), taskrecon and its baselines interleaved, wall time from spawn to exit (start-up
 * included) and peak RSS of each child. Writes its section of bench/RESULTS.md.
 *
 *   npm run build && node bench/rabbitmq.js [--messages 20000] [--queues 200] [--runs 3] [--batch 1000] [--out FILE]
 *
 * Works in a scratch vhost on 127.0.0.1 (5672, management API 15672, guest/guest), deleted at the
 * end, and creates and drops the MariaDB schema taskrecon_bench_rabbitmq for the audit.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import { request } from 'undici';
import { measure, median, rssMethod } from './measure.js';
import { machineFacts, markdownTable, updateSection } from './results.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin/run.js');
const SERVER = process.env.TASKRECON_BENCH_DB ?? 'mysql://root@127.0.0.1:3306';
const SCHEMA = 'taskrecon_bench_rabbitmq';
const API = 'http://127.0.0.1:15672/api';
const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const MESSAGES = Number(arg('messages', 20_000));
const QUEUES = Number(arg('queues', 200));
const RUNS = Number(arg('runs', 3));
const OUT = arg('out', join(ROOT, 'bench/RESULTS.md'));
/** The bare mover's prefetch window. */
const PREFETCH = 500;
/** taskrecon's batch: one intent and one audit insert per this many messages, two batches in its window. */
const BATCH = Number(arg('batch', 1000));

const vhost = `taskrecon-bench-${randomBytes(3).toString('hex')}`;
const AMQP_URL = `amqp://guest:guest@127.0.0.1:5672/${vhost}`;

async function api(method, path, body) {
  const response = await request(`${API}${path}`, {
    method,
    headers: { authorization: AUTH, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await response.body.text();
  if (response.statusCode >= 300 && response.statusCode !== 404)
    throw new Error(`${method} ${path}: HTTP ${response.statusCode}`);
}

/** The bare mover: what `queues move` does on the wire, without audit rows, filters or reports. */
const AMQPLIB = pathToFileURL(join(ROOT, 'node_modules/amqplib/channel_api.js')).href;
const BASELINE = `
import amqp from '${AMQPLIB}';
const [url, from, to, prefetch] = process.argv.slice(2);
const c = await amqp.connect(url);
const src = await c.createChannel();
const pub = await c.createConfirmChannel();
const { messageCount } = await src.checkQueue(from);
await src.prefetch(Number(prefetch));
let taken = 0;
let acked = 0;
await new Promise((resolve, reject) => {
  src.consume(from, (m) => {
    if (!m || taken >= messageCount) return;
    taken++;
    pub.publish('', to, m.content, { ...m.properties, mandatory: true }, (error) => {
      if (error) return reject(error);
      src.ack(m);
      if (++acked === messageCount) resolve();
    });
  });
});
await src.close();
await pub.close();
await c.close();
`;

function ensureOk(run, what) {
  if (run.code !== 0) throw new Error(`${what} exited ${run.code}: ${run.stderr.slice(0, 500)}`);
  return run;
}

async function depth(ch, q) {
  return (await ch.checkQueue(q)).messageCount;
}

/**
 * Watches a move from outside, the same way for both movers: every 25 ms the depths of both
 * queues, on its own channel. Returns stop(), which resolves to the seconds from the first message
 * taken off `from` (its ready count below `total`) to the last one ready on `to` (its count at
 * `total`): the move itself, without start-up, connecting or the settling after the last publish.
 */
async function watchMove(connection, from, to, total) {
  const ch = await connection.createChannel();
  let first;
  let full;
  let stopped = false;
  const loop = (async () => {
    while (!stopped && full === undefined) {
      const [f, t] = [await depth(ch, from), await depth(ch, to)];
      const now = performance.now();
      if (first === undefined && f < total) first = now;
      if (t >= total) full = now;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    await ch.close();
    if (first === undefined || full === undefined)
      throw new Error(`the watch of ${from} → ${to} saw no whole move`);
    return (full - first) / 1000;
  };
}

async function main() {
  await api('PUT', `/vhosts/${vhost}`, {});
  await api('PUT', `/permissions/${vhost}/guest`, { configure: '.*', write: '.*', read: '.*' });
  const admin = await mysql.createConnection({ uri: `${SERVER}/`, multipleStatements: true });
  await admin.query(`DROP DATABASE IF EXISTS ${SCHEMA}; CREATE DATABASE ${SCHEMA} CHARACTER SET utf8mb4`);
  const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bench-rabbitmq-'));
  writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${SERVER}/${SCHEMA}\n`);
  writeFileSync(join(cwd, 'baseline.mjs'), BASELINE);
  const connection = await amqp.connect(AMQP_URL);
  const ch = await connection.createConfirmChannel();
  try {
    ensureOk(await measure(process.execPath, [BIN, 'init', '--audit-only'], { cwd }), 'init');
    await ch.assertQueue('parking', { durable: true });
    await ch.assertQueue('work', { durable: true });
    const body = Buffer.from(JSON.stringify({ eventId: 'x', payload: 'p'.repeat(420) }));
    for (let i = 0; i < MESSAGES; i++) {
      ch.sendToQueue('parking', body, {
        persistent: true,
        messageId: `evt-${i}`,
        contentType: 'application/json',
      });
      if (i % 1000 === 999) await ch.waitForConfirms();
    }
    await ch.waitForConfirms();
    for (let i = 0; i < QUEUES; i++)
      await ch.assertQueue(`q${String(i).padStart(4, '0')}`, { durable: true });
    const facts = machineFacts({ 'RabbitMQ vhost': 'scratch, deleted after', 'peak RSS': rssMethod });
    const move = { tr: [], trRss: [], base: [], baseRss: [], trMove: [], baseMove: [] };
    const inspect = { tr: [], trRss: [], curl: [] };
    const rabbit = ['--rabbitmq', AMQP_URL, '--api', 'http://guest:guest@127.0.0.1:15672'];
    for (let run = 0; run < RUNS; run++) {
      // taskrecon moves parking → work, the baseline moves them back: each run starts full.
      await admin.query(`DELETE FROM ${SCHEMA}.taskrecon_audit`);
      // The intents of the run before go; the table stays, as it does for a user after the first
      // move (the first run here creates it).
      await admin.query(`DELETE FROM ${SCHEMA}.taskrecon_intent`).catch((error) => {
        if (error.code !== 'ER_NO_SUCH_TABLE') throw error;
      });
      const watchTr = await watchMove(connection, 'parking', 'work', MESSAGES);
      const tr = ensureOk(
        await measure(
          process.execPath,
          [
            BIN,
            'queues',
            'move',
            ...rabbit,
            '--from',
            'parking',
            '--to',
            'work',
            '--yes',
            '--batch',
            String(BATCH),
          ],
          { cwd },
        ),
        'queues move',
      );
      if ((await depth(ch, 'work')) !== MESSAGES) throw new Error('queues move did not move every message');
      // Messages audited: a job-batch row (task_id `(jobs)`) names every message of its batch.
      const [[audited]] = await admin.query(
        `SELECT COALESCE(SUM(CASE WHEN task_id = '(jobs)' THEN JSON_LENGTH(before_json, '$.jobs') ELSE 1 END), 0) AS n
           FROM ${SCHEMA}.taskrecon_audit`,
      );
      const [[open]] = await admin.query(
        `SELECT COUNT(*) AS n FROM ${SCHEMA}.taskrecon_intent WHERE state <> 'landed'`,
      );
      if (Number(audited.n) !== MESSAGES || Number(open.n) !== 0)
        throw new Error(`queues move audited ${audited.n} messages and left ${open.n} intents unsettled`);
      move.tr.push(tr.seconds);
      move.trRss.push(tr.peakRssMb);
      move.trMove.push(await watchTr());
      const watchBase = await watchMove(connection, 'work', 'parking', MESSAGES);
      const base = ensureOk(
        await measure(process.execPath, ['baseline.mjs', AMQP_URL, 'work', 'parking', String(PREFETCH)], {
          cwd,
        }),
        'baseline',
      );
      if ((await depth(ch, 'parking')) !== MESSAGES)
        throw new Error('the baseline did not move every message');
      move.base.push(base.seconds);
      move.baseRss.push(base.peakRssMb);
      move.baseMove.push(await watchBase());
      const q = await measure(process.execPath, [BIN, 'queues', ...rabbit, '--json'], { cwd });
      if (q.code > 2) throw new Error(`queues exited ${q.code}: ${q.stderr}`);
      inspect.tr.push(q.seconds);
      inspect.trRss.push(q.peakRssMb);
      const curl = ensureOk(
        await measure('curl', ['-s', '-u', 'guest:guest', `${API}/queues/${vhost}`]),
        'curl',
      );
      inspect.curl.push(curl.seconds);
    }
    const fmt = (s) => `${s.toFixed(2)} s`;
    const mb = (x) => `${Math.round(x)} MB`;
    const rate = (n, s) => `${Math.round(n / s).toLocaleString('en-US')} msg/s`;
    const n = (x) => x.toLocaleString('en-US');
    const text = [
      '## RabbitMQ: queues move with confirms, queues on a vhost of many queues',
      '',
      `${n(MESSAGES)} persistent messages of ~450 bytes parked in one durable queue; ${n(QUEUES)} more empty durable queues for the inspection. Medians of ${RUNS} runs, wall time from spawn to exit including Node start-up, taskrecon and its baselines interleaved.`,
      '',
      facts,
      '',
      markdownTable([
        {
          what: `taskrecon queues move (consumer, batch ${BATCH}, prefetch ${2 * BATCH}, confirms, an intent per batch, one job-batch audit row per batch in MariaDB, one multiple ack per batch after its confirms)`,
          time: fmt(median(move.tr)),
          rate: rate(MESSAGES, median(move.tr)),
          'rate while moving': rate(MESSAGES, median(move.trMove)),
          'peak RSS': mb(Math.max(...move.trRss)),
          'every run': move.tr.map((t, i) => `${fmt(t)} (moving ${fmt(move.trMove[i])})`).join(' / '),
        },
        {
          what: `bare amqplib: consumer with prefetch ${PREFETCH}, confirmed publish, ack on each confirm, no audit`,
          time: fmt(median(move.base)),
          rate: rate(MESSAGES, median(move.base)),
          'rate while moving': rate(MESSAGES, median(move.baseMove)),
          'peak RSS': mb(Math.max(...move.baseRss)),
          'every run': move.base.map((t, i) => `${fmt(t)} (moving ${fmt(move.baseMove[i])})`).join(' / '),
        },
        {
          what: `taskrecon queues on ${n(QUEUES + 2)} queues (API topology + one passive declare each)`,
          time: fmt(median(inspect.tr)),
          rate: '',
          'rate while moving': '',
          'peak RSS': mb(Math.max(...inspect.trRss)),
          'every run': inspect.tr.map((t) => fmt(t)).join(' / '),
        },
        {
          what: 'curl of the management API queue list alone',
          time: fmt(median(inspect.curl)),
          rate: '',
          'rate while moving': '',
          'peak RSS': '',
          'every run': inspect.curl.map((t) => fmt(t)).join(' / '),
        },
      ]),
      '',
      `taskrecon / bare mover: ${(median(move.base) / median(move.tr)).toFixed(2)}× the rate by wall time, ${(median(move.baseMove) / median(move.trMove)).toFixed(2)}× while moving (medians of the same run); peak RSS is the largest of the runs.`,
      '',
      "Rate: messages over the wall time from spawn to exit (start-up, connecting and the settling after the last publish included). Rate while moving: messages over the time from the first message taken off the source (its ready count below the total) to the last one ready in the target, watched from outside the same way for both movers (both queue depths every 25 ms on a channel of the benchmark's own).",
      '',
      'Both movers consume with a prefetch window and publish on a confirm channel. The bare mover acks each message as its confirm arrives; taskrecon commits an intent per batch before publishing it, acks the batch once its confirms are in (one `basic.ack` with `multiple` when nothing open lies below it), waits for the broker to have the acks, then settles the intent with the audit of the batch, one job-batch row naming every message of it; two batches are in the window and up to three being settled at once. The intent table is created by the first run and kept (its rows deleted between runs), as it is for a user after a first move. Times include Node start-up (the bare mover loads amqplib only, taskrecon its CLI). The load average at start covers the minute before the run (a benchmark run just before counts in it); the medians interleave both movers, so any load hits both.',
    ].join('\n');
    updateSection(OUT, 'rabbitmq', text);
    process.stdout.write(`${text}\n`);
  } finally {
    await ch.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await api('DELETE', `/vhosts/${vhost}`).catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
    await admin.end();
  }
}

await main();
