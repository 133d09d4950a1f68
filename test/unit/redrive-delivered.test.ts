import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../../src/core/backoff.js';
import { decide } from '../../src/core/retry-decision.js';
import { configSchema } from '../../src/config/schema.js';
import { redisQueueFromConfig } from '../../src/dispatch/redis-queue.js';

const base = { attemptsBefore: 2, policy: DEFAULT_POLICY, nowEpoch: 1_700_000_000, random: () => 0.5 };
const brokers = {
  jobs: {
    kind: 'redis' as const,
    url: 'redis://127.0.0.1:6379/0',
    framework: 'list' as const,
    lists: { ready: 'async_queue', delayed: 'async_delay_queue' },
  },
  app: { kind: 'redis' as const, url: 'redis://127.0.0.1:6379/0', framework: 'laravel' as const, prefix: '' },
};

describe('a delivered outcome', () => {
  it('holds the row (no write), unlike a retryable failure at the same attempt', () => {
    expect(decide({ ...base, result: { outcome: 'delivered' } })).toEqual({ transition: 'hold' });
    expect(decide({ ...base, result: { outcome: 'retryable' } }).transition).toBe('retry');
  });
});

describe('the redis-list handler config', () => {
  it('is admitted by the config schema with broker or url + list', () => {
    const parsed = configSchema.safeParse({
      handlers: {
        refund: { type: 'redis-list', broker: 'jobs' },
        sms: { type: 'redis-list', url: 'redis://h/0', list: 'q' },
      },
    });
    expect(parsed.success).toBe(true);
    expect(configSchema.safeParse({ handlers: { refund: { type: 'redis-list', queue: 'q' } } }).success).toBe(
      false,
    );
  });

  it('takes a list broker’s ready list, or an explicit list', async () => {
    const fromBroker = redisQueueFromConfig(
      { type: 'redis-list', broker: 'jobs' },
      'handlers.refund',
      brokers,
    );
    expect(fromBroker.kind).toBe('redis-list');
    await fromBroker.close();
    const fromUrl = redisQueueFromConfig(
      { type: 'redis-list', url: 'redis://127.0.0.1:6379/0', list: 'q' },
      'h',
      undefined,
    );
    await fromUrl.close();
  });

  it('refuses what it cannot deliver to, naming the handler key', () => {
    const build = (config: Parameters<typeof redisQueueFromConfig>[0]) => () =>
      redisQueueFromConfig(config, 'handlers.refund', brokers);
    expect(build({ type: 'redis-list', broker: 'app' })).toThrow(
      /handlers\.refund\.broker: 'app' is a laravel broker/,
    );
    expect(build({ type: 'redis-list', broker: 'nope' })).toThrow(/no broker 'nope'/);
    expect(build({ type: 'redis-list', url: 'redis://127.0.0.1/0' })).toThrow(
      /handlers\.refund\.list is missing/,
    );
    expect(build({ type: 'redis-list', broker: 'jobs', url: 'redis://127.0.0.1/0' })).toThrow(/not both/);
    expect(build({ type: 'redis-list' })).toThrow(/give broker/);
  });
});
