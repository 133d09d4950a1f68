import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { openTestRedis } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { closedLoopbackPort } from '../fixtures/redrive/counting-handler.js';
import { configDir } from '../fixtures/redrive/seed.js';

// `redrive` with the redis-list dispatcher: the task row is re-delivered onto the classic design's
// Redis list exactly once, stays processing under its lease, and the consumer's own write settles
// it. An unreachable Redis is a retryable failure that puts the row back to pending per the policy.

const REDIS_DB = 13;
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const prefix = `tr_redrive_${randomBytes(4).toString('hex')}_`;
const READY = `${prefix}async_queue`;

interface RedriveJson {
  claimed: number;
  succeeded: number;
  delivered: number;
  retried: number;
  failed: number;
}

let schema: TestSchema;
let redis: Redis;
let cwd: string;

async function insert(bizType: string, eventId: string, payload = '{"orderId":7,"amount":"19.90"}') {
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at)
     VALUES (?, ?, ?, ?, 0, NOW() - INTERVAL 5 SECOND, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 1 HOUR)`,
    [bizType, `order-${eventId}`, eventId, payload],
  );
}

async function row(eventId: string) {
  const [rows] = await schema.sql.query(
    `SELECT status, retry_count AS attempts, last_error AS lastError,
            UNIX_TIMESTAMP(next_retry_time) AS nextRetry FROM async_task WHERE event_id = ?`,
    [eventId],
  );
  const r = (rows as Array<Record<string, unknown>>)[0];
  if (!r) throw new Error(`no row ${eventId}`);
  return {
    status: Number(r.status),
    attempts: Number(r.attempts),
    lastError: r.lastError as string | null,
    nextRetry: Number(r.nextRetry),
  };
}

/** The server's clock, in whole seconds. */
async function serverNow(): Promise<number> {
  const [rows] = await schema.sql.query('SELECT UNIX_TIMESTAMP() AS now');
  return Number((rows as Array<{ now: unknown }>)[0]?.now);
}

const redrive = (args: string[] = [], lease = '30s') =>
  runJson<RedriveJson>(['redrive', '--pause', '0ms', '--lease', lease, ...args], { cwd });

// The consumer of the classic design, as its own process: BRPOP one message, apply it, write the
// outcome onto the task row (a guarded UPDATE that expects processing), print the message.
const CONSUMER = `
import { createRequire } from 'node:module';
const require = createRequire(process.env.REPO_PACKAGE);
const { Redis } = require('ioredis');
const mysql = require('mysql2/promise');
const [redisUrl, list, dsn] = process.argv.slice(2);
const redis = new Redis(redisUrl);
const popped = await redis.brpop(list, 5);
if (!popped) { console.error('nothing to pop'); process.exit(1); }
const message = JSON.parse(popped[1]);
const db = await mysql.createConnection(dsn);
const [result] = await db.query(
  'UPDATE async_task SET status = 2, updated_at = NOW() WHERE event_id = ? AND status = 1',
  [message.eventId],
);
console.log(JSON.stringify({ message, changed: result.affectedRows }));
await db.end();
redis.disconnect();
`;

function consume(): Promise<{ message: Record<string, unknown>; changed: number }> {
  const script = join(cwd, 'consumer.mjs');
  writeFileSync(script, CONSUMER);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, `redis://127.0.0.1:6379/${REDIS_DB}`, READY, schema.dsn], {
      env: { ...process.env, REPO_PACKAGE: join(REPO, 'package.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`consumer exited ${code}: ${err}`));
      else resolve(JSON.parse(out.trim()) as { message: Record<string, unknown>; changed: number });
    });
  });
}

beforeAll(async () => {
  redis = await openTestRedis(REDIS_DB);
  schema = await createTestSchema('redrive_redis_list');
  const closed = await closedLoopbackPort();
  cwd = configDir(
    [
      `db: ${schema.dsn}`,
      'brokers:',
      '  jobs:',
      '    kind: redis',
      `    url: redis://127.0.0.1:6379/${REDIS_DB}`,
      '    framework: list',
      `    lists: { ready: ${READY}, delayed: ${prefix}async_delay_queue }`,
      'handlers:',
      '  refund: { type: redis-list, broker: jobs }',
      `  sms: { type: redis-list, url: "redis://127.0.0.1:${closed}/0", list: ${prefix}sms_queue }`,
      '',
    ].join('\n'),
  );
  const init = await runCli(['init', '--profile', 'async-task'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  const keys = await redis?.keys(`${prefix}*`);
  if (keys?.length) await redis.del(...keys);
  redis?.disconnect();
  await schema?.drop();
});

beforeEach(async () => {
  await schema.sql.query('DELETE FROM async_task');
  await redis.del(READY);
});

describe('redrive onto a Redis list (redis-list)', () => {
  it('delivers the task once with the envelope body, leaves it processing, and the consumer settles it', async () => {
    await insert('refund', 'evt-refund-1');
    const first = await redrive();
    expect(first.code, first.stderr).toBe(0);
    assertMatchesSchema('redrive', first.json);
    expect(first.json).toMatchObject({ claimed: 1, delivered: 1, succeeded: 0, retried: 0, failed: 0 });
    expect(await row('evt-refund-1')).toMatchObject({ status: 1, attempts: 0 });

    // A second run inside the lease neither claims nor pushes it again.
    const second = await redrive();
    expect(second.json).toMatchObject({ claimed: 0, delivered: 0 });
    const messages = await redis.lrange(READY, 0, -1);
    expect(messages).toHaveLength(1);
    expect(JSON.parse(messages[0] ?? '{}')).toEqual({
      eventId: 'evt-refund-1',
      bizType: 'refund',
      bizId: 'order-evt-refund-1',
      payload: { orderId: 7, amount: '19.90' },
      attempt: 1,
    });

    const consumed = await consume();
    expect(consumed.changed).toBe(1);
    expect(await row('evt-refund-1')).toMatchObject({ status: 2 });
    expect(await redis.llen(READY)).toBe(0);
  });

  it('delivers again once the lease has passed with no outcome (at least once)', async () => {
    await insert('refund', 'evt-refund-2');
    expect((await redrive([], '2s')).json).toMatchObject({ delivered: 1 });
    await new Promise((resolve) => setTimeout(resolve, 3100));
    const again = await redrive(['--stuck-after', '1s'], '2s');
    expect(again.json, again.stderr).toMatchObject({ claimed: 1, delivered: 1 });
    expect(await redis.llen(READY)).toBe(2);
    expect(await row('evt-refund-2')).toMatchObject({ status: 1 });
  });

  it('an unreachable Redis is retryable: the row goes back to pending with the first backoff, nothing pushed', async () => {
    await insert('sms', 'evt-sms-1');
    const before = await serverNow();
    const run = await redrive();
    const after = await serverNow();
    // Every attempt of the run failed: exit 1.
    expect(run.code, run.stderr).toBe(1);
    expect(run.json).toMatchObject({ claimed: 1, delivered: 0, retried: 1 });
    const task = await row('evt-sms-1');
    expect(task).toMatchObject({ status: 0, attempts: 1 });
    expect(task.lastError).toMatch(/cannot reach Redis/);
    // The default schedule's first retry is 1s (plus a small jitter) after the failed attempt,
    // which happened while the run ran (whole seconds: the clock may tick between the two).
    expect(task.nextRetry).toBeGreaterThanOrEqual(before + 1);
    expect(task.nextRetry).toBeLessThanOrEqual(after + 3);
  });

  it('refuses a handler that points at a Laravel broker, naming the handler', async () => {
    const bad = configDir(
      [
        `db: ${schema.dsn}`,
        'brokers:',
        '  app: { kind: redis, url: "redis://127.0.0.1:6379/13", framework: laravel, prefix: x_ }',
        'handlers:',
        '  refund: { type: redis-list, broker: app }',
        '',
      ].join('\n'),
    );
    const run = await runJson<{ error: { message: string } }>(['redrive'], { cwd: bad });
    expect(run.code).toBe(3);
    expect(run.json.error.message).toMatch(/handlers\.refund\.broker: 'app' is a laravel broker/);
  });
});
