import type { Redis } from 'ioredis';
import type { QueueSample, QueueStats } from '../types.js';
import type { RedisNodes } from './cluster.js';
import {
  belongsTo,
  globEscape,
  parseQueueKey,
  payloadIdentity,
  QUEUE_KEY_PATTERN,
  queueKeys,
  type ParsedKey,
  type QueueKeys,
  type RedisLayout,
} from './layout.js';

/**
 * Read-only inspection of a Redis DB: discovery by SCAN (never KEYS), counts by LLEN / ZCARD / ZCOUNT,
 * the oldest overdue age from the lowest score, payloads only for `--peek` samples. Nothing here
 * writes: every command sent is a read (SCAN, TYPE, PTTL, LLEN, ZCARD, ZCOUNT, ZRANGE, LRANGE, TIME).
 */

/** Keys per SCAN step: large enough that a DB of a million other keys takes a few hundred steps. */
const SCAN_COUNT = 5000;
/** At most this many keys of other layouts are kept for the messages that name them. */
const OTHER_KEYS_KEPT = 20;

export interface Discovery {
  /** Queues of the configured layout found by their keys, by name. */
  found: Map<string, Set<ParsedKey['part']>>;
  /** Keys of other layouts (another prefix, braced vs legacy think-queue), a few of them. */
  others: ParsedKey[];
  /** Keys of the configured layout that have a TTL (an eviction policy `volatile-*` may evict them). */
  keysWithTtl: string[];
}

/** The broker's clock: TIME, in unix seconds with microseconds. */
export async function redisNow(client: Redis): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) + Number(micros) / 1e6;
}

/** Finds every framework queue key of the DB in SCAN steps (on a cluster: of each master). */
export async function discover(nodes: RedisNodes, layout: RedisLayout): Promise<Discovery> {
  const found = new Map<string, Set<ParsedKey['part']>>();
  const others: ParsedKey[] = [];
  const own: string[] = [];
  if (layout.framework === 'list') {
    const lists = layout.lists;
    if (lists) {
      const [ready, delayed] = await Promise.all([
        nodes.forKey(lists.ready).exists(lists.ready),
        nodes.forKey(lists.delayed).exists(lists.delayed),
      ]);
      const parts = new Set<ParsedKey['part']>();
      if (ready) parts.add('ready');
      if (delayed) parts.add('delayed');
      if (parts.size) found.set(lists.ready, parts);
      own.push(...[lists.ready, lists.delayed].filter((_, i) => (i === 0 ? ready : delayed)));
    }
  } else {
    const pattern =
      layout.framework === 'laravel' ? `${globEscape(layout.prefix)}${QUEUE_KEY_PATTERN}` : QUEUE_KEY_PATTERN;
    const otherPattern =
      layout.framework === 'laravel' && layout.prefix !== '' ? QUEUE_KEY_PATTERN : undefined;
    for (const [match, { client }] of [pattern, otherPattern].flatMap((m) =>
      nodes.masters.map((master) => [m, master] as const),
    )) {
      if (match === undefined) continue;
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', match, 'COUNT', SCAN_COUNT);
        cursor = next;
        for (const key of keys) {
          const parsed = parseQueueKey(key);
          if (!parsed) continue;
          if (belongsTo(layout, parsed)) {
            if (match !== pattern) continue;
            const parts = found.get(parsed.queue) ?? new Set();
            parts.add(parsed.part);
            found.set(parsed.queue, parts);
            own.push(key);
          } else if (others.length < OTHER_KEYS_KEPT) others.push(parsed);
        }
      } while (cursor !== '0');
    }
  }
  const keysWithTtl: string[] = [];
  if (own.length) {
    const ttls = await routedReplies(
      nodes,
      own.map((key) => ['pttl', key]),
    );
    own.forEach((key, i) => {
      if (Number(ttls[i]) > 0) keysWithTtl.push(key);
    });
  }
  return { found, others, keysWithTtl };
}

/**
 * Sends read commands at once, each to the server of its key (the first argument): one round trip
 * per server, as a pipeline would, and on a cluster keys of different slots in one go.
 */
async function routedReplies(nodes: RedisNodes, commands: Array<[string, ...string[]]>): Promise<unknown[]> {
  return Promise.all(
    commands.map(([name, key, ...rest]) => nodes.forKey(key ?? '').call(name, key ?? '', ...rest)),
  );
}

/** Counts of one queue; `peek` > 0 also reads that many jobs from the head of the ready list. */
export async function countQueue(
  nodes: RedisNodes,
  keys: QueueKeys,
  nowEpoch: number,
  peek: number,
  takeEnd: 'left' | 'right',
): Promise<{ stats: QueueStats; reservedLowestEpoch: number | null }> {
  const now = String(Math.floor(nowEpoch));
  const commands: Array<[string, ...string[]]> = [
    ['llen', keys.ready],
    ['zcard', keys.delayed],
    ['zcount', keys.delayed, '-inf', now],
    ['zrange', keys.delayed, '0', '0', 'WITHSCORES'],
  ];
  if (keys.reserved)
    commands.push(
      ['zcard', keys.reserved],
      ['zcount', keys.reserved, '-inf', now],
      ['zrange', keys.reserved, '0', '0', 'WITHSCORES'],
    );
  if (peek > 0)
    commands.push(
      takeEnd === 'left'
        ? ['lrange', keys.ready, '0', String(peek - 1)]
        : ['lrange', keys.ready, String(-peek), '-1'],
    );
  const replies = await routedReplies(nodes, commands);
  const lowest = replies[3] as string[];
  const lowestScore = lowest.length >= 2 ? Number(lowest[1]) : undefined;
  const delayedOverdue = Number(replies[2]);
  const stats: QueueStats = {
    name: keys.queue,
    ready: Number(replies[0]),
    delayed: Number(replies[1]),
    delayedOverdue,
    oldestOverdueSeconds:
      lowestScore !== undefined && delayedOverdue > 0
        ? Math.max(0, Math.floor(nowEpoch - lowestScore))
        : null,
    reserved: keys.reserved ? Number(replies[4]) : null,
    reservedExpired: keys.reserved ? Number(replies[5]) : null,
    unacked: null,
    consumers: null,
    durable: null,
    arguments: null,
    deadLettered: null,
    deliveries: null,
  };
  if (peek > 0) {
    const members = replies[replies.length - 1] as string[];
    const ordered = takeEnd === 'left' ? members : [...members].reverse();
    stats.samples = ordered.map((member): QueueSample => {
      const identity = payloadIdentity(member);
      return {
        jobId: identity.id ?? '',
        name: identity.name,
        attempts: identity.attempts,
        bytes: Buffer.byteLength(member),
      };
    });
  }
  const reservedLowest = keys.reserved ? (replies[6] as string[]) : [];
  return { stats, reservedLowestEpoch: reservedLowest.length >= 2 ? Number(reservedLowest[1]) : null };
}

/** The queues to report: the configured ones (even when empty) and every one found. */
export function queuesToReport(
  layout: RedisLayout,
  configured: readonly string[],
  found: Iterable<string>,
): QueueKeys[] {
  const names = new Set<string>(configured);
  if (layout.framework === 'list' && layout.lists) names.add(layout.lists.ready);
  for (const name of found) names.add(name);
  return [...names].sort().map((name) => queueKeys(layout, name));
}
