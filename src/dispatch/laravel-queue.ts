import { queueKeys } from '../brokers/redis/layout.js';
import { phpGet, phpJsonDecode, resetAttempts } from './php-json.js';
import { pickColumn, type QueueFlavor } from './failed-job-queue.js';

/**
 * Laravel's `php artisan queue:retry` (Illuminate\Queue\Console\RetryCommand), for the
 * `laravel-failed-jobs` profile:
 * - the payload is `json_encode(json_decode($payload, true))` with `attempts` reset to 0 when set
 *   (resetAttempts), re-encoded once more by refreshRetryUntil — idempotent after the first pass;
 * - DatabaseQueue::pushRaw inserts {queue, attempts: 0, reserved_at: NULL, available_at: now,
 *   created_at: now, payload} into the connection's table (default `jobs`);
 * - RedisQueue::pushRaw runs LuaScripts::push with KEYS `queues:{queue}` and `queues:{queue}:notify`
 *   (both under the client's prefix, e.g. `laravel_database_`), RPUSHing the payload and a `1`.
 * refreshRetryUntil recomputes `retryUntil` by calling the job's PHP method, which taskrecon cannot
 * do: a payload whose `retryUntil` deadline has passed is refused (the worker would fail it at
 * once); retry it with `php artisan queue:retry` instead.
 */

/** Illuminate\Queue\LuaScripts::push(), verbatim. */
export const LARAVEL_PUSH_SCRIPT = `-- Push the job onto the queue...
redis.call('rpush', KEYS[1], ARGV[1])
-- Push a notification onto the "notify" queue...
redis.call('rpush', KEYS[2], 1)`;

export const laravelQueue: QueueFlavor = {
  framework: 'laravel',
  redisLayouts: ['laravel'],
  redisKey: ({ prefix }, queue) => queueKeys({ framework: 'laravel', prefix }, queue).ready,
  redisOps({ prefix }, queue, payload) {
    const keys = queueKeys({ framework: 'laravel', prefix }, queue);
    return [
      {
        kind: 'eval',
        script: LARAVEL_PUSH_SCRIPT,
        keys: [keys.ready, keys.notify as string],
        args: [payload],
      },
    ];
  },
  jobColumns(columns) {
    const names = ['queue', 'payload', 'attempts', 'reserved_at', 'available_at', 'created_at'];
    const missing = names.filter((n) => !pickColumn(columns, [n]));
    if (missing.length) return `has no ${missing.join(', ')} column: it is not Laravel's jobs table`;
    const [queue, payload, attempts, reservedAt, availableAt, createdAt] = names.map(
      (n) => pickColumn(columns, [n]) as string,
    ) as [string, string, string, string, string, string];
    return { queue, payload, attempts, reservedAt, availableAt, createdAt };
  },
  retryPayload(stored, nowEpoch) {
    const decoded = phpJsonDecode(stored);
    const retryUntil = phpGet(decoded, 'retryUntil');
    const command = phpGet(phpGet(decoded, 'data') ?? null, 'command');
    if (
      command !== undefined &&
      retryUntil &&
      typeof retryUntil === 'object' &&
      !Array.isArray(retryUntil) &&
      retryUntil.kind === 'number'
    ) {
      const deadline = Number(retryUntil.text);
      if (deadline <= nowEpoch) {
        return {
          refused: `its retryUntil deadline (${new Date(deadline * 1000).toISOString()}) has passed and only the job's PHP retryUntil() can set a new one: run \`php artisan queue:retry\` for it`,
        };
      }
    }
    return { payload: resetAttempts(stored) };
  },
};
