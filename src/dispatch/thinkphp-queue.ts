import { queueKeys } from '../brokers/redis/layout.js';
import { THINKPHP_LAYOUTS } from '../config/brokers.js';
import { resetAttempts } from './php-json.js';
import { pickColumn, type QueueFlavor, type RedisTarget } from './failed-job-queue.js';

/**
 * think-queue's `php think queue:retry` (think\queue\command\Retry, v3 for ThinkPHP 6+), for the
 * `thinkphp-failed-jobs` profile:
 * - the payload is `json_encode(json_decode($payload, true))` with `attempts` reset to 0 when set;
 * - connector\Database::pushRaw inserts {queue, attempts: 0, reserve_time: NULL, available_time:
 *   now, create_time: now, payload} (older releases name them reserved_at/available_at/created_at
 *   and add a `reserved` flag: the live table decides);
 * - connector\Redis::pushRaw RPUSHes the payload onto `{queues:NAME}` (braces: a Redis Cluster
 *   hash tag; releases before 3.0.5 write `queues:NAME`, the connection's `layout: thinkphp-legacy`),
 *   under the client's prefix if one is configured — no notify list.
 */

/** The ready list of a queue in the connection's layout, under its prefix. */
function readyKey({ prefix, layout }: RedisTarget, queue: string): string {
  return `${prefix}${queueKeys({ framework: layout, prefix: '' }, queue).ready}`;
}

export const thinkphpQueue: QueueFlavor = {
  framework: 'thinkphp',
  redisLayouts: THINKPHP_LAYOUTS,
  redisKey: readyKey,
  redisOps: (target, queue, payload) => [{ kind: 'rpush', key: readyKey(target, queue), value: payload }],
  jobColumns(columns) {
    const found = {
      queue: pickColumn(columns, ['queue']),
      payload: pickColumn(columns, ['payload']),
      attempts: pickColumn(columns, ['attempts']),
      reservedAt: pickColumn(columns, ['reserve_time', 'reserved_at']),
      availableAt: pickColumn(columns, ['available_time', 'available_at']),
      createdAt: pickColumn(columns, ['create_time', 'created_at', 'create_at']),
    };
    const missing = Object.entries(found)
      .filter(([, v]) => !v)
      .map(([k]) => k);
    if (missing.length) return `lacks the think-queue column(s) for ${missing.join(', ')}`;
    const reservedFlag = pickColumn(columns, ['reserved']);
    return { ...(found as Record<keyof typeof found, string>), ...(reservedFlag ? { reservedFlag } : {}) };
  },
  retryPayload: (stored) => ({ payload: resetAttempts(stored) }),
};
