import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedisClient } from '../../brokers/redis/connection.js';
import { maskDsnText } from '../../db/dsn.js';
import type { TourStep } from './steps.js';

/**
 * The queues step of `taskrecon demo`: when a Redis answers (127.0.0.1:6379 unless `--redis`), a scratch key prefix
 * in DB 0 gets a few Laravel-layout jobs (ready, an hour-overdue delayed job, an expired reservation,
 * and a queue renamed in a deploy) for `queues` to show; the keys are removed after the tour. Without
 * a Redis the step is left out and one line says so.
 */

/** The Redis the tour looks for unless `demo --redis` names another. */
export const DEMO_REDIS_URL = 'redis://127.0.0.1:6379/0';
/** A demo must not wait for a Redis that is not there. */
const PROBE_TIMEOUT_MS = 700;

export interface DemoQueues {
  step?: TourStep;
  /** One line for the operator when there is no Redis. */
  note?: string;
  cleanup(): Promise<void>;
}

const job = (uuid: string, attempts = 0) =>
  JSON.stringify({
    uuid,
    displayName: 'App\\Jobs\\SendPaidSms',
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    attempts,
  });

export async function prepareDemoQueues(url: string = DEMO_REDIS_URL): Promise<DemoQueues> {
  const client = createRedisClient(url, { connectTimeout: PROBE_TIMEOUT_MS }, () => undefined);
  try {
    await client.connect();
  } catch {
    client.disconnect();
    return {
      note: `No Redis at ${maskDsnText(url)}: the tour leaves out its queues step (start redis-server, or give --redis URL, to see it).`,
      cleanup: async () => undefined,
    };
  }
  const prefix = `taskrecon_demo_${randomBytes(4).toString('hex')}_`;
  const key = (queue: string, suffix = '') => `${prefix}queues:${queue}${suffix}`;
  const now = Math.floor(Date.now() / 1000);
  await client
    .multi()
    .rpush(key('sms'), job('demo-1'), job('demo-2'), job('demo-3'))
    .zadd(key('sms', ':delayed'), now - 3600, job('demo-4'), now + 600, job('demo-5'))
    .zadd(key('sms', ':reserved'), now - 900, job('demo-6', 1))
    .rpush(key('sms_old'), job('demo-7'), job('demo-8'))
    .exec();
  // Snapshots go to a file of their own, removed with the keys: the sandbox database is left as built.
  const state = join(tmpdir(), `${prefix}state.json`);
  const step: TourStep = {
    command: 'queues',
    title: 'And the queue half? queues',
    why: 'The Redis side of the same system, on a scratch key prefix of your local Redis (removed after the tour): per queue ready, delayed, overdue, reserved and expired jobs, and what needs a person — a delayed job nobody migrated, the reservation of a worker that died, a queue renamed in a deploy that nobody consumes, a Redis without persistence.',
    args: () => ['queues', '--redis', url, '--framework', 'laravel', '--prefix', prefix, '--queue', 'sms'],
    okExits: [0, 1, 2],
  };
  return {
    step,
    cleanup: async () => {
      await client.del(key('sms'), key('sms', ':delayed'), key('sms', ':reserved'), key('sms_old'));
      client.disconnect();
      rmSync(state, { force: true });
    },
  };
}
