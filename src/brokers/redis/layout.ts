import type { RedisFramework } from '../../config/brokers.js';

/**
 * Where each framework keeps a queue in Redis, read from the frameworks' own sources:
 * - laravel (`Illuminate\Queue\RedisQueue::getQueue`): `<prefix>queues:Q` (list, RPUSH / LPOP),
 *   `:delayed` and `:reserved` (zsets, score = unix time available / reservation expiry), `:notify`
 *   (one element per pushed job, for the blocking pop);
 * - thinkphp (think-queue ≥ 3.0.5 `connector\Redis::getQueue`): `{queues:Q}`, `{queues:Q}:delayed`,
 *   `{queues:Q}:reserved` — braced, so a queue's keys share one Redis Cluster hash slot;
 * - thinkphp-legacy (think-queue before 3.0.5): `queues:Q`, `queues:Q:delayed`, `queues:Q:reserved`;
 * - bullmq: `<prefix>:Q:wait`, `:active`, `:delayed` … — read and moved through the bullmq library
 *   (bullmq/), never here;
 * - list (the classic task-table design): a ready list (LPUSH / BRPOP) and a delay zset, both named
 *   in the config.
 * Pure: no I/O.
 */

export interface QueueKeys {
  /** The queue's name as workers know it (`default`; for `list`, the ready list's name). */
  queue: string;
  ready: string;
  delayed: string;
  /** null: the layout has no reservations (`list`). */
  reserved: string | null;
  /** null: the layout has no notify list. */
  notify: string | null;
}

export interface RedisLayout {
  framework: RedisFramework;
  /** laravel: the connection's key prefix. */
  prefix: string;
  /** list: the two configured names. */
  lists?: { ready: string; delayed: string };
}

/** Which end of the ready list a producer pushes to; workers take from the other end. */
export function pushEnd(framework: RedisFramework): 'left' | 'right' {
  // The classic design LPUSHes and BRPOPs; Laravel and think-queue RPUSH and LPOP.
  return framework === 'list' ? 'left' : 'right';
}

export function queueKeys(layout: RedisLayout, queue: string): QueueKeys {
  switch (layout.framework) {
    case 'laravel': {
      const base = `${layout.prefix}queues:${queue}`;
      return {
        queue,
        ready: base,
        delayed: `${base}:delayed`,
        reserved: `${base}:reserved`,
        notify: `${base}:notify`,
      };
    }
    case 'thinkphp': {
      const base = `{queues:${queue}}`;
      return { queue, ready: base, delayed: `${base}:delayed`, reserved: `${base}:reserved`, notify: null };
    }
    case 'thinkphp-legacy': {
      const base = `queues:${queue}`;
      return { queue, ready: base, delayed: `${base}:delayed`, reserved: `${base}:reserved`, notify: null };
    }
    case 'list': {
      const lists = layout.lists;
      if (!lists || queue !== lists.ready) {
        // Only the configured pair exists; any other name is its own ready list with no delay set.
        return { queue, ready: queue, delayed: `${queue}:delayed`, reserved: null, notify: null };
      }
      return { queue, ready: lists.ready, delayed: lists.delayed, reserved: null, notify: null };
    }
    case 'bullmq': {
      // BullMQ's own keys (`<prefix>:Q:wait` …) are read and written through its library only.
      const base = `${layout.prefix}:${queue}`;
      return {
        queue,
        ready: `${base}:wait`,
        delayed: `${base}:delayed`,
        reserved: `${base}:active`,
        notify: null,
      };
    }
  }
}

/** A key found by SCAN, read as one of the layouts. */
export interface ParsedKey {
  /** `thinkphp`, or `prefixed` (laravel with this prefix; '' is also the thinkphp-legacy layout). */
  layout: 'thinkphp' | 'prefixed';
  prefix: string;
  queue: string;
  part: 'ready' | 'delayed' | 'reserved' | 'notify';
}

const BRACED = /^\{queues:([^}]+)\}(?::(delayed|reserved))?$/;
const PREFIXED = /^(.*?)queues:(.+?)(?::(delayed|reserved|notify))?$/s;

/** Reads a key as a framework queue key, or null when it is none. */
export function parseQueueKey(key: string): ParsedKey | null {
  const braced = BRACED.exec(key);
  if (braced) {
    return {
      layout: 'thinkphp',
      prefix: '',
      queue: braced[1] as string,
      part: (braced[2] as ParsedKey['part'] | undefined) ?? 'ready',
    };
  }
  const prefixed = PREFIXED.exec(key);
  if (!prefixed || key.startsWith('{')) return null;
  return {
    layout: 'prefixed',
    prefix: prefixed[1] as string,
    queue: prefixed[2] as string,
    part: (prefixed[3] as ParsedKey['part'] | undefined) ?? 'ready',
  };
}

/** Whether a parsed key belongs to the configured layout. */
export function belongsTo(layout: RedisLayout, parsed: ParsedKey): boolean {
  switch (layout.framework) {
    case 'laravel':
      return parsed.layout === 'prefixed' && parsed.prefix === layout.prefix;
    case 'thinkphp':
      return parsed.layout === 'thinkphp';
    case 'thinkphp-legacy':
      return parsed.layout === 'prefixed' && parsed.prefix === '' && parsed.part !== 'notify';
    case 'list':
    case 'bullmq':
      return false;
  }
}

/** How a layout other than the configured one is named in messages. */
export function describeOther(parsed: ParsedKey): string {
  if (parsed.layout === 'thinkphp') return 'thinkphp (braced {queues:Q})';
  if (parsed.prefix === '') return "thinkphp-legacy / laravel with prefix ''";
  return `laravel with prefix '${parsed.prefix}'`;
}

/** The SCAN pattern that finds every framework queue key of every layout (glob-escaped prefix not needed). */
export const QUEUE_KEY_PATTERN = '*queues:*';

/** Escapes glob characters so a literal key can be a SCAN MATCH pattern. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * The job's identity for the audit log: Laravel's payload `uuid`, think-queue's payload `id`, else
 * a fingerprint of the member (the caller hashes it).
 */
export function payloadIdentity(member: string): {
  id: string | null;
  name: string | null;
  attempts: number | null;
} {
  let parsed: unknown;
  try {
    parsed = JSON.parse(member);
  } catch {
    return { id: null, name: null, attempts: null };
  }
  if (!parsed || typeof parsed !== 'object') return { id: null, name: null, attempts: null };
  const p = parsed as Record<string, unknown>;
  const id =
    typeof p.uuid === 'string' && p.uuid
      ? p.uuid
      : typeof p.id === 'string' || typeof p.id === 'number'
        ? String(p.id)
        : typeof p.event_id === 'string'
          ? p.event_id
          : typeof p.eventId === 'string'
            ? p.eventId
            : null;
  const name =
    typeof p.displayName === 'string'
      ? p.displayName
      : typeof p.job === 'string'
        ? p.job
        : typeof p.biz_type === 'string'
          ? p.biz_type
          : null;
  const attempts = typeof p.attempts === 'number' ? p.attempts : null;
  return { id, name, attempts };
}
