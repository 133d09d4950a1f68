import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { digestDb, openTestRedis } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';

// think-queue's two key layouts in a scratch DB (think-queue keys carry no prefix, so this file has
// DB 9 to itself and empties it: no other test file may use DB 9): `{queues:Q}` (≥ 3.0.5, Redis Cluster hash tags) and the legacy
// `queues:Q`. Counts, queue findings, key-format planted and healthy, recover as think-queue migrates.

const DB = 9;
const URL = `redis://127.0.0.1:6379/${DB}`;
let redis: Redis;
let now: number;

interface QueuesJson {
  brokers: Array<{ framework: string; queues: Array<Record<string, unknown>> }>;
  findings: Array<{ code: string; queue: string | null; count: number | null }>;
}

const job = (id: string, attempts = 0) =>
  JSON.stringify({
    job: 'app\\job\\SendPaidSmsJob',
    maxTries: null,
    timeout: null,
    data: { order: id },
    id,
    attempts,
  });

const queues = (framework: string, ...extra: string[]) =>
  runJson<QueuesJson>(['queues', '--redis', URL, '--framework', framework, ...extra]);

async function seedBraced(): Promise<void> {
  await redis.rpush('{queues:sms}', job('b1'), job('b2'));
  await redis.zadd('{queues:sms}:delayed', now - 120, job('b3'), now + 600, job('b4'));
  await redis.zadd('{queues:sms}:reserved', now - 300, job('b5', 1));
}

beforeAll(async () => {
  redis = await openTestRedis(DB);
  await redis.flushdb();
  now = Math.floor(Date.now() / 1000);
});

afterAll(async () => {
  await redis?.flushdb();
  redis?.disconnect();
});

describe('queues on the thinkphp layouts', () => {
  it('thinkphp: counts the braced keys exactly and raises the queue findings', async () => {
    await seedBraced();
    const { json } = await queues('thinkphp', '--queue', 'sms');
    assertMatchesSchema('queues', json);
    expect(json.brokers[0]?.queues).toEqual([
      expect.objectContaining({
        name: 'sms',
        ready: 2,
        delayed: 2,
        delayedOverdue: 1,
        reserved: 1,
        reservedExpired: 1,
      }),
    ]);
    const codes = json.findings
      .filter((f) => f.queue === 'sms')
      .map((f) => f.code)
      .sort();
    expect(codes).toEqual(['delayed-overdue', 'reservation-expired']);
  });

  it('thinkphp: no key-format while only braced keys exist', async () => {
    const { json } = await queues('thinkphp', '--queue', 'sms');
    expect(json.findings.some((f) => f.code === 'key-format')).toBe(false);
  });

  it('thinkphp: key-format when legacy queues:Q keys exist beside the braced ones', async () => {
    await redis.rpush('queues:sms', job('l1'), job('l2'), job('l3'));
    const { json } = await queues('thinkphp', '--queue', 'sms');
    expect(json.findings.find((f) => f.code === 'key-format')).toMatchObject({ queue: null, count: 1 });
    // the legacy keys are not counted as the braced queue's
    expect(json.brokers[0]?.queues[0]).toMatchObject({ name: 'sms', ready: 2 });
  });

  it('thinkphp-legacy: counts queues:Q and raises key-format for the braced keys', async () => {
    await redis.zadd('queues:sms:delayed', now + 60, job('l4'));
    const { json } = await queues('thinkphp-legacy', '--queue', 'sms');
    expect(json.brokers[0]?.queues).toEqual([
      expect.objectContaining({
        name: 'sms',
        ready: 3,
        delayed: 1,
        delayedOverdue: 0,
        reserved: 0,
        reservedExpired: 0,
      }),
    ]);
    expect(json.findings.map((f) => f.code)).toContain('key-format');
    expect(json.findings.filter((f) => f.queue === 'sms')).toEqual([]);
  });

  it('thinkphp-legacy: no key-format once the braced keys are gone', async () => {
    await redis.del('{queues:sms}', '{queues:sms}:delayed', '{queues:sms}:reserved');
    const { json } = await queues('thinkphp-legacy', '--queue', 'sms');
    expect(json.findings.some((f) => f.code === 'key-format')).toBe(false);
  });

  it('inspection with --peek writes nothing', async () => {
    await seedBraced();
    const before = await digestDb(redis);
    await queues('thinkphp', '--peek', '3');
    await queues('thinkphp-legacy', '--peek', '3');
    expect(await digestDb(redis)).toEqual(before);
  });

  it('recover migrates as think-queue does: due delayed and expired reserved jobs RPUSHed verbatim, no notify list', async () => {
    const dry = await runJson<{ matched: number; moved: number }>([
      'queues',
      'recover',
      '--redis',
      URL,
      '--framework',
      'thinkphp',
      '--queue',
      'sms',
      '--dry-run',
    ]);
    expect(dry.json).toMatchObject({ matched: 2, moved: 0 });
    expect(await redis.llen('{queues:sms}')).toBe(2);
    // a real recover needs the audit database: refused, nothing moved
    const refused = await runCli(['queues', 'recover', '--redis', URL, '--framework', 'thinkphp', '--yes']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('needs a database for the audit log');
    expect(await redis.lrange('{queues:sms}', 0, -1)).toEqual([job('b1'), job('b2')]);
  });
});
