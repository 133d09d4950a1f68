import type { BrokerConfig } from '../config/brokers.js';
import { resolveBrokerUrl } from '../config/secrets.js';
import { configError, TaskreconError } from '../errors.js';
import { RedisLists } from './redis-list.js';
import { taskMessage, type DispatchResult, type DispatchTask, type Dispatcher } from './types.js';

/**
 * `redis-list`: re-delivers a task row onto a Redis list for its consumer, as the classic design's
 * producer does (LPUSH; the consumer BRPOPs). The body is `{eventId, bizType, bizId, payload,
 * attempt}`, the same envelope the `http` dispatcher POSTs. A successful push is `delivered`: the row
 * stays `processing` under its claim's lease until the consumer writes the outcome; when no outcome
 * comes before the lease expires, the row is stuck and the next `redrive` delivers it again (at
 * least once: consumers dedupe by event id). A push Redis does not take is `retryable`.
 */

export interface RedisQueueOptions {
  url: string;
  list: string;
}

/** A push that does not land within this long is counted as failed (the lease must outlast it). */
export const REDIS_PUSH_TIMEOUT_MS = 5000;

/** The classic producer's LPUSH, as one script so it rides the client's MULTI/EXEC path. */
const LPUSH_SCRIPT = "return redis.call('lpush', KEYS[1], ARGV[1])";

export class RedisQueueDispatcher implements Dispatcher {
  readonly kind = 'redis-list';
  readonly timeoutMs = REDIS_PUSH_TIMEOUT_MS;
  private readonly lists: RedisLists;

  constructor(private readonly options: RedisQueueOptions) {
    this.lists = new RedisLists(options.url);
  }

  async dispatch(task: DispatchTask): Promise<DispatchResult> {
    const body = taskMessage(task);
    try {
      await this.lists.pushAll([
        { kind: 'eval', script: LPUSH_SCRIPT, keys: [this.options.list], args: [body] },
      ]);
    } catch (error) {
      const message = error instanceof TaskreconError ? error.message : (error as Error).message;
      return { outcome: 'retryable', error: `redis-list ${this.options.list}: ${message}` };
    }
    return { outcome: 'delivered' };
  }

  async close(): Promise<void> {
    await this.lists.close();
  }
}

/** The handler entry (`handlers.<bizType>`), as the config schema admits it. */
export interface RedisListHandlerConfig {
  type: 'redis-list';
  broker?: string;
  url?: string;
  list?: string;
}

/**
 * Builds the dispatcher from `{type: redis-list, broker: NAME[, list: KEY]}` (a `framework: list`
 * broker: its `lists.ready`) or `{type: redis-list, url: URL, list: KEY}`. Laravel and think-queue
 * brokers are refused: their workers run only jobs in their own format, which a task row is not.
 */
export function redisQueueFromConfig(
  config: RedisListHandlerConfig,
  where: string,
  brokers: Record<string, BrokerConfig> | undefined,
): RedisQueueDispatcher {
  if (config.broker !== undefined && config.url !== undefined)
    throw configError(`${where}: give broker or url, not both`);
  if (config.url !== undefined) {
    if (!config.list)
      throw configError(
        `${where}.list is missing`,
        'Name the list the consumer pops, e.g. list: async_queue.',
      );
    return new RedisQueueDispatcher({ url: config.url, list: config.list });
  }
  if (config.broker === undefined)
    throw configError(`${where}: give broker (a brokers: entry) or url and list`);
  const broker = brokers?.[config.broker];
  if (!broker)
    throw configError(
      `${where}.broker: no broker '${config.broker}' in brokers:`,
      `Brokers configured: ${Object.keys(brokers ?? {}).join(', ') || '(none)'}.`,
    );
  if (broker.kind !== 'redis') throw configError(`${where}.broker: '${config.broker}' is not a Redis broker`);
  if (broker.framework !== 'list')
    throw configError(
      `${where}.broker: '${config.broker}' is a ${broker.framework} broker, whose workers run only their own job format`,
      'Point redis-list at a framework: list broker or give url and list; failed framework jobs are re-pushed with laravel-queue / thinkphp-queue.',
    );
  const list = config.list ?? broker.lists?.ready;
  if (!list) throw configError(`${where}: broker '${config.broker}' has no lists.ready and no list is given`);
  return new RedisQueueDispatcher({ url: resolveBrokerUrl(config.broker, broker).url, list });
}
