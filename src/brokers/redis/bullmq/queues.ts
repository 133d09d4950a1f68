import { Queue, type ConnectionOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { TaskreconError } from '../../../errors.js';
import { globEscape } from '../layout.js';

/**
 * BullMQ queues through its own library: which queues a prefix holds (SCAN, read-only) and a
 * `Queue` on the broker's connection, so counts, retries and the stalled check run BullMQ's own Lua
 * scripts (they keep its markers, events and counters right). Nothing here hand-moves a key.
 */

/** Keys per SCAN step. */
const SCAN_COUNT = 5000;

/** Every BullMQ queue writes these two keys: its id counter and its meta hash. */
const QUEUE_KEY = /^(.*):([^:]+):(?:meta|id)$/s;

/** The queues of a prefix, by their `<prefix>:Q:meta` / `<prefix>:Q:id` keys. */
export async function bullmqQueueNames(client: Redis, prefix: string): Promise<string[]> {
  const names = new Set<string>();
  for (const suffix of ['meta', 'id']) {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(
        cursor,
        'MATCH',
        `${globEscape(prefix)}:*:${suffix}`,
        'COUNT',
        SCAN_COUNT,
      );
      cursor = next;
      for (const key of keys) {
        const match = QUEUE_KEY.exec(key);
        if (match && match[1] === prefix) names.add(match[2] as string);
      }
    } while (cursor !== '0');
  }
  return [...names].sort();
}

/** Prefixes of other BullMQ queues in the DB (a few), for the message when the configured one has none. */
export async function otherBullmqPrefixes(client: Redis, prefix: string): Promise<string[]> {
  const seen = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', '*:meta', 'COUNT', SCAN_COUNT);
    cursor = next;
    for (const key of keys) {
      const match = QUEUE_KEY.exec(key);
      if (match && match[1] !== prefix && (await client.type(key)) === 'hash') seen.add(match[1] as string);
    }
  } while (cursor !== '0' && seen.size < 5);
  return [...seen];
}

/** exit 3: the prefix holds no BullMQ queue. */
export function noBullmqQueues(
  broker: string,
  prefix: string,
  display: string,
  others: string[],
): TaskreconError {
  return new TaskreconError(
    `broker ${broker}: no BullMQ queue with prefix '${prefix}' is in ${display} (no ${prefix}:<queue>:meta or :id key)${others.length ? `; BullMQ queues with prefix ${others.map((p) => `'${p}'`).join(', ')} are` : ''}`,
    {
      code: 'USAGE',
      hint: others.length
        ? 'Set the prefix the application gives BullMQ (`prefix:` of the broker, or --prefix). Nothing was read or moved.'
        : "Check the DB index in the URL and the prefix (BullMQ's default is bull); --framework bullmq reads only BullMQ's keys. Nothing was moved.",
    },
  );
}

/** A BullMQ `Queue` on the broker's own connection (shared: closing it leaves the connection open). */
export function openQueue(
  client: Redis,
  prefix: string,
  name: string,
  extra: { maxStalledCount?: number; stalledInterval?: number } = {},
): Queue {
  // bullmq bundles its own ioredis typings; the client is an ioredis instance all the same.
  const connection = client as unknown as ConnectionOptions;
  // The stalled check reads maxStalledCount / stalledInterval from the options of what runs it.
  return new Queue(name, { connection, prefix, skipVersionCheck: true, ...extra });
}

/** The queue must exist under the prefix, else exit 3 naming the ones that do. */
export async function requireQueue(
  client: Redis,
  prefix: string,
  broker: string,
  queue: string,
): Promise<void> {
  const names = await bullmqQueueNames(client, prefix);
  if (!names.includes(queue)) {
    throw new TaskreconError(
      `queue ${queue} is not a BullMQ queue with prefix '${prefix}' on broker ${broker}`,
      {
        code: 'USAGE',
        hint: `BullMQ queues found: ${names.join(', ') || 'none'}. Check the queue name and the prefix. Nothing was moved.`,
      },
    );
  }
}
