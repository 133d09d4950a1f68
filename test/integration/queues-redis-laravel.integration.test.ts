import { mkdtempSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { digestDb, dropPrefix, openTestRedis, laravelBrokerYaml } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';

// `queues` on Laravel's key layout in a scratch DB of the machine's Redis: exact counts, each
// queue finding raised on a planted case and not on a healthy one, and not one byte written.

const DB = 10;
const URL = `redis://127.0.0.1:6379/${DB}`;
const prefix = `tr_h2_${randomBytes(3).toString('hex')}_`;
const healthyPrefix = `tr_h2ok_${randomBytes(3).toString('hex')}_`;
let redis: Redis;
let now: number;

interface QueuesJson {
  brokers: Array<{ name: string; framework: string; url: string; queues: Array<Record<string, unknown>> }>;
  findings: Array<{ code: string; level: string; queue: string | null; count: number | null }>;
}

const job = (uuid: string, attempts = 0) =>
  JSON.stringify({
    uuid,
    displayName: 'App\\Jobs\\SendSms',
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    attempts,
  });

function inline(p: string, ...extra: string[]): string[] {
  return ['queues', '--redis', URL, '--framework', 'laravel', '--prefix', p, ...extra];
}

const queueCodes = (json: QueuesJson, queue: string) =>
  json.findings
    .filter((f) => f.queue === queue)
    .map((f) => f.code)
    .sort();

beforeAll(async () => {
  redis = await openTestRedis(DB);
  now = Math.floor(Date.now() / 1000);
  const q = (name: string, suffix = '') => `${prefix}queues:${name}${suffix}`;
  // high: 3 ready, 2 delayed (one an hour overdue), 2 reserved (one expired 10 minutes ago).
  await redis.rpush(q('high'), job('h1'), job('h2'), job('h3'));
  await redis.rpush(q('high', ':notify'), 1, 1, 1);
  await redis.zadd(q('high', ':delayed'), now - 3600, job('d1'), now + 3600, job('d2'));
  await redis.zadd(q('high', ':reserved'), now - 600, job('r1', 1), now + 600, job('r2', 1));
  // old: the queue renamed in a deploy, 4 ready jobs nobody consumes.
  await redis.rpush(q('old'), job('o1'), job('o2'), job('o3'), job('o4'));
  // healthy: jobs waiting for their time, reservations of a live worker.
  const h = (name: string, suffix = '') => `${healthyPrefix}queues:${name}${suffix}`;
  await redis.rpush(h('high'), job('k1'));
  await redis.zadd(h('high', ':delayed'), now + 3600, job('k2'));
  await redis.zadd(h('high', ':reserved'), now + 90, job('k3', 1));
});

afterAll(async () => {
  await dropPrefix(redis, prefix);
  await dropPrefix(redis, healthyPrefix);
  redis?.disconnect();
});

describe('queues on the laravel layout', () => {
  it('counts ready, delayed, overdue, reserved and expired exactly, per queue', async () => {
    const { code, json } = await runJson<QueuesJson>(inline(prefix, '--queue', 'high'));
    expect(code).toBeGreaterThanOrEqual(1);
    assertMatchesSchema('queues', json);
    const broker = json.brokers[0];
    expect(broker).toMatchObject({ framework: 'laravel', url: URL });
    const byName = Object.fromEntries((broker?.queues ?? []).map((q) => [q.name, q]));
    expect(byName.high).toMatchObject({
      ready: 3,
      delayed: 2,
      delayedOverdue: 1,
      reserved: 2,
      reservedExpired: 1,
      unacked: null,
      consumers: null,
      deadLettered: null,
    });
    expect(Number(byName.high?.oldestOverdueSeconds)).toBeGreaterThanOrEqual(3600);
    expect(Number(byName.high?.oldestOverdueSeconds)).toBeLessThan(3700);
    expect(byName.old).toMatchObject({
      ready: 4,
      delayed: 0,
      delayedOverdue: 0,
      reserved: 0,
      oldestOverdueSeconds: null,
    });
  });

  it('raises delayed-overdue, reservation-expired and unknown-queue on the planted queues', async () => {
    const { json } = await runJson<QueuesJson>(inline(prefix, '--queue', 'high'));
    expect(queueCodes(json, 'high')).toEqual(['delayed-overdue', 'reservation-expired']);
    expect(queueCodes(json, 'old')).toEqual(['unknown-queue']);
    expect(json.findings.find((f) => f.code === 'unknown-queue')).toMatchObject({ count: 4, level: 'warn' });
    expect(json.findings.find((f) => f.code === 'delayed-overdue')).toMatchObject({ count: 1 });
  });

  it('raises none of them on a healthy queue', async () => {
    const { json } = await runJson<QueuesJson>(inline(healthyPrefix, '--queue', 'high'));
    expect(json.brokers[0]?.queues).toEqual([
      expect.objectContaining({
        name: 'high',
        ready: 1,
        delayed: 1,
        delayedOverdue: 0,
        reserved: 1,
        reservedExpired: 0,
      }),
    ]);
    expect(json.findings.filter((f) => f.queue !== null)).toEqual([]);
  });

  it('without configured queues, reports every queue found and names none unknown', async () => {
    const { json } = await runJson<QueuesJson>(inline(prefix));
    expect(json.brokers[0]?.queues.map((q) => q.name)).toEqual(['high', 'old']);
    expect(json.findings.some((f) => f.code === 'unknown-queue')).toBe(false);
  });

  it('writes nothing: a digest of every key of the DB is the same after queues and queues --peek', async () => {
    const before = await digestDb(redis);
    expect(before.keys).toBeGreaterThan(0);
    await runCli(inline(prefix, '--queue', 'high'));
    const peeked = await runJson<QueuesJson>(inline(prefix, '--queue', 'high', '--peek', '2'));
    expect(peeked.json.brokers[0]?.queues.find((q) => q.name === 'high')?.samples).toEqual([
      { jobId: 'h1', name: 'App\\Jobs\\SendSms', attempts: 0, bytes: Buffer.byteLength(job('h1')) },
      { jobId: 'h2', name: 'App\\Jobs\\SendSms', attempts: 0, bytes: Buffer.byteLength(job('h2')) },
    ]);
    await runCli(inline(prefix, '--peek', '5'));
    expect(await digestDb(redis)).toEqual(before);
  });

  it('reads the broker from the config file by name', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-queues-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      ['brokers:', ...laravelBrokerYaml('app', URL, prefix, ['high']), ''].join('\n'),
    );
    const { json } = await runJson<QueuesJson>(['queues', '--broker', 'app'], { cwd });
    expect(json.brokers[0]?.name).toBe('app');
    expect(queueCodes(json, 'old')).toEqual(['unknown-queue']);
  });

  it('a prefix that matches no key: exit 3 naming the layout and the keys that are there', async () => {
    const wrong = `${prefix}nope_`;
    const result = await runCli(inline(wrong));
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`no queue key of the laravel with prefix '${wrong}' layout`);
    expect(result.stderr).toContain(`laravel with prefix '${prefix}'`);
    expect(result.stderr).toMatch(/Hint: .*prefix/);
  });

  it('renders a table that fits a narrow terminal', async () => {
    const result = await runCli(inline(prefix, '--queue', 'high'));
    expect(result.stdout).toMatch(/^queue\tready\tdelayed/m);
    expect(result.stdout).toMatch(/^high\t3\t2\t1\t/m);
    expect(result.stdout).toContain('WARN unknown-queue');
  });
});
