import { TaskreconError } from '../../errors.js';
import type { RedisNodes } from './cluster.js';
import { queueKeys, type QueueKeys, type RedisLayout } from './layout.js';
import { keySlot } from './slots.js';

/**
 * On a Redis Cluster a Lua script may touch keys of one hash slot only, so a move or recover is
 * atomic there only when every key it touches shares a slot: think-queue's braced `{queues:Q}`
 * keys keep one queue's keys together, Laravel queues named with a hash tag (`{jobs}:high`,
 * `{jobs}:low`) keep several queues together. Anything else is refused before a key is read for
 * moving or an intent is written — never done half.
 */

function keysOf(keys: QueueKeys): string[] {
  // Every key the queue has, moved or not: the checks before a move read them all in one call.
  return [keys.ready, keys.delayed, keys.reserved, keys.notify].filter((k): k is string => k !== null);
}

function slotsOf(keys: readonly string[]): Map<number, string[]> {
  const bySlot = new Map<number, string[]>();
  for (const key of keys) bySlot.set(keySlot(key), [...(bySlot.get(keySlot(key)) ?? []), key]);
  return bySlot;
}

function describe(bySlot: Map<number, string[]>): string {
  return [...bySlot]
    .map(([slot, keys]) => `slot ${slot}: ${keys.slice(0, 2).join(', ')}${keys.length > 2 ? ', …' : ''}`)
    .join('; ');
}

/**
 * Refuses (exit 3) a move from `from` to `to`, or a recover of `from` (no `to`), whose keys span
 * hash slots of a cluster; returns the source's ready key, which names the slot the batches run in.
 */
export function checkOneSlot(
  broker: { name: string; display: string; layout: RedisLayout; nodes: RedisNodes },
  request: { from: string; to?: string },
): { from: string } {
  const from = queueKeys(broker.layout, request.from);
  if (!broker.nodes.cluster) return { from: from.ready };
  const keys = keysOf(from);
  if (request.to !== undefined && request.to !== request.from)
    keys.push(...keysOf(queueKeys(broker.layout, request.to)));
  const bySlot = slotsOf(keys);
  if (bySlot.size === 1) return { from: from.ready };
  const what =
    request.to === undefined
      ? `the keys of queue ${request.from}`
      : `the keys of queues ${request.from} and ${request.to}`;
  const example =
    broker.layout.framework === 'thinkphp'
      ? "think-queue's {queues:Q} keys put each queue in its own slot, so jobs move between two queues only on one server"
      : 'e.g. Laravel queues {jobs}:high and {jobs}:low; a queue named {default} keeps its own keys together';
  throw new TaskreconError(
    `broker ${broker.name}: ${what} lie in ${bySlot.size} hash slots of the Redis Cluster at ${broker.display} (${describe(bySlot)}); a move is atomic only within one slot`,
    {
      code: 'USAGE',
      hint: `Name the queues with a common hash tag {tag} so their keys share a slot (${example}). Nothing was moved or written.`,
    },
  );
}
