/**
 * The pure rules of a RabbitMQ dead-letter topology: a queue's effective dead-letter settings
 * (arguments, else its policy), how a message is routed through exchanges and bindings, and the
 * topology findings. No I/O: the inputs are what the management API lists.
 */

export interface TopologyQueue {
  name: string;
  durable: boolean;
  exclusive: boolean;
  autoDelete: boolean;
  arguments: Record<string, unknown>;
  /** `effective_policy_definition`: keys without the `x-` prefix (`dead-letter-exchange`, `message-ttl`). */
  policy: Record<string, unknown>;
  ready: number | null;
  unacked: number | null;
  consumers: number | null;
}

export interface TopologyExchange {
  name: string;
  type: string;
  durable: boolean;
  arguments: Record<string, unknown>;
  policy: Record<string, unknown>;
}

export interface TopologyBinding {
  source: string;
  destination: string;
  destinationType: 'queue' | 'exchange';
  routingKey: string;
  arguments: Record<string, unknown>;
}

export interface Topology {
  queues: ReadonlyMap<string, TopologyQueue>;
  exchanges: ReadonlyMap<string, TopologyExchange>;
  bindings: readonly TopologyBinding[];
}

export function topologyOf(
  queues: readonly TopologyQueue[],
  exchanges: readonly TopologyExchange[],
  bindings: readonly TopologyBinding[],
): Topology {
  return {
    queues: new Map(queues.map((q) => [q.name, q])),
    exchanges: new Map(exchanges.map((e) => [e.name, e])),
    bindings,
  };
}

/** Where a queue's dead letters go, and after how long its messages expire. */
export interface DeadLetterSettings {
  /** undefined: no dead-letter exchange (expired and rejected messages are discarded); '' is the default exchange. */
  exchange: string | undefined;
  /** undefined: each message keeps its own routing key. */
  routingKey: string | undefined;
  ttlMs: number | undefined;
  /** Which of the settings came from a policy rather than the queue's arguments. */
  fromPolicy: Array<'exchange' | 'routingKey' | 'ttl'>;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** Queue arguments win over a policy for the dead-letter exchange and key; the lower TTL of the two applies. */
export function deadLetterSettings(queue: Pick<TopologyQueue, 'arguments' | 'policy'>): DeadLetterSettings {
  const fromPolicy: DeadLetterSettings['fromPolicy'] = [];
  let exchange = str(queue.arguments['x-dead-letter-exchange']);
  let routingKey = str(queue.arguments['x-dead-letter-routing-key']);
  if (exchange === undefined && str(queue.policy['dead-letter-exchange']) !== undefined) {
    exchange = str(queue.policy['dead-letter-exchange']);
    fromPolicy.push('exchange');
    if (routingKey === undefined && str(queue.policy['dead-letter-routing-key']) !== undefined) {
      routingKey = str(queue.policy['dead-letter-routing-key']);
      fromPolicy.push('routingKey');
    }
  }
  const argTtl = num(queue.arguments['x-message-ttl']);
  const policyTtl = num(queue.policy['message-ttl']);
  let ttlMs = argTtl;
  if (policyTtl !== undefined && (argTtl === undefined || policyTtl < argTtl)) {
    ttlMs = policyTtl;
    fromPolicy.push('ttl');
  }
  return { exchange, routingKey, ttlMs, fromPolicy };
}

/** Topic binding match: words split on '.', `*` one word, `#` zero or more. */
export function topicMatches(pattern: string, key: string): boolean {
  const p = pattern === '' ? [] : pattern.split('.');
  const k = key === '' ? [] : key.split('.');
  const memo = new Map<string, boolean>();
  const walk = (i: number, j: number): boolean => {
    const id = `${i}:${j}`;
    const known = memo.get(id);
    if (known !== undefined) return known;
    let result: boolean;
    if (i === p.length) result = j === k.length;
    else if (p[i] === '#') result = walk(i + 1, j) || (j < k.length && walk(i, j + 1));
    else result = j < k.length && (p[i] === '*' || p[i] === k[j]) && walk(i + 1, j + 1);
    memo.set(id, result);
    return result;
  };
  return walk(0, 0);
}

/** Headers binding match; without the message's headers (undefined) every headers binding counts as a match. */
export function headersMatch(
  bindingArgs: Record<string, unknown>,
  headers: Record<string, unknown> | undefined,
): boolean {
  if (!headers) return true;
  const mode = String(bindingArgs['x-match'] ?? 'all');
  const withX = mode.endsWith('-with-x');
  const pairs = Object.entries(bindingArgs).filter(
    ([k]) => k !== 'x-match' && (withX || !k.startsWith('x-')),
  );
  const hit = ([k, v]: [string, unknown]) =>
    k in headers && (v === '' || v === undefined || headers[k] === v);
  return mode.startsWith('any') ? pairs.some(hit) : pairs.every(hit);
}

export interface RouteResult {
  /** Queues a message published this way lands in. */
  queues: string[];
  /** An exchange on the way that does not exist (publishing there drops the message). */
  missingExchange?: string;
  /** Exchanges on the way that are not durable (gone after a broker restart). */
  nonDurableExchanges: string[];
}

/** Routes a message through exchanges (exchange-to-exchange bindings and alternate exchanges included). */
export function route(
  topology: Topology,
  exchange: string,
  routingKey: string,
  headers?: Record<string, unknown>,
): RouteResult {
  const result: RouteResult = { queues: [], nonDurableExchanges: [] };
  const seen = new Set<string>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    if (name === '') {
      if (topology.queues.has(routingKey)) result.queues.push(routingKey);
      return;
    }
    const ex = topology.exchanges.get(name);
    if (!ex) {
      result.missingExchange ??= name;
      return;
    }
    if (!ex.durable) result.nonDurableExchanges.push(name);
    // The delayed-message plugin routes as the type it wraps.
    const type =
      ex.type === 'x-delayed-message' ? String(ex.arguments['x-delayed-type'] ?? 'direct') : ex.type;
    let matched = 0;
    for (const b of topology.bindings) {
      if (b.source !== name) continue;
      const hit =
        type === 'fanout'
          ? true
          : type === 'topic'
            ? topicMatches(b.routingKey, routingKey)
            : type === 'headers'
              ? headersMatch(b.arguments, headers)
              : b.routingKey === routingKey;
      if (!hit) continue;
      matched++;
      if (b.destinationType === 'queue') {
        if (topology.queues.has(b.destination) && !result.queues.includes(b.destination))
          result.queues.push(b.destination);
      } else visit(b.destination);
    }
    const alternate = str(ex.arguments['alternate-exchange']) ?? str(ex.policy['alternate-exchange']);
    if (matched === 0 && alternate !== undefined) visit(alternate);
  };
  visit(exchange);
  return result;
}

const WILDCARD = /(^|\.)[*#](\.|$)/;

/**
 * The routing keys a queue's dead letters carry when it sets no dead-letter routing key: the keys
 * of sampled messages when there are any, else the keys it is bound with on direct and topic
 * exchanges (no wildcards), else its own name (published through the default exchange).
 * An empty list: the keys cannot be known (bound only by fanout, headers or wildcard patterns).
 */
export function ownRoutingKeys(
  topology: Topology,
  queue: string,
  sampleKeys: readonly string[] = [],
): string[] {
  if (sampleKeys.length) return [...new Set(sampleKeys)];
  const bound = topology.bindings.filter(
    (b) => b.destinationType === 'queue' && b.destination === queue && b.source !== '',
  );
  if (bound.length === 0) return [queue];
  const keys = bound
    .filter((b) => {
      const type = topology.exchanges.get(b.source)?.type;
      return (type === 'direct' || type === 'topic') && !WILDCARD.test(b.routingKey);
    })
    .map((b) => b.routingKey);
  return [...new Set(keys)];
}

/** The queues a queue dead-letters into, for every routing key its dead letters may carry. */
export function deadLetterTargets(
  topology: Topology,
  queue: string,
  sampleKeys: readonly string[] = [],
): string[] {
  const q = topology.queues.get(queue);
  if (!q) return [];
  const dl = deadLetterSettings(q);
  if (dl.exchange === undefined) return [];
  const keys = dl.routingKey !== undefined ? [dl.routingKey] : ownRoutingKeys(topology, queue, sampleKeys);
  const out = new Set<string>();
  for (const key of keys) for (const target of route(topology, dl.exchange, key).queues) out.add(target);
  return [...out];
}

/** Parking queue names tried for a queue that retries through dead-lettering, `{q}` being its name. */
export const PARKING_NAMES = [
  '{q}.parking',
  '{q}_parking',
  '{q}.dlq',
  '{q}_dlq',
  '{q}.dead',
  'parking_queue',
  'parking',
];

/**
 * Where a retrying queue's consumer parks what it gives up on: the first queue of PARKING_NAMES
 * (or `named`) that exists and is not on the queue's own dead-letter chain; undefined for a queue
 * without a dead-letter exchange (it does not retry through the broker), or when none exists.
 */
export function parkingQueueOf(topology: Topology, queue: string, named?: string): string | undefined {
  const q = topology.queues.get(queue);
  if (!q || deadLetterSettings(q).exchange === undefined) return undefined;
  const chain = deadLetterClosure(topology, [queue]);
  const names = named ? [named] : PARKING_NAMES.map((n) => n.replace('{q}', queue));
  return names.find((n) => topology.queues.has(n) && !chain.includes(n));
}

/**
 * The queues `queue` holds given-up messages of, sorted: the queues whose dead letters (by their
 * arguments or a policy) reach it, and the retrying queues it is the parking queue of by name.
 * A delay queue (a TTL) is no such source: what it dead-letters is a retry coming back to its
 * business queue, not a message given up on.
 */
export function parkingSources(topology: Topology, queue: string): string[] {
  const out = new Set(deadLetterSources(topology, queue));
  for (const [name, other] of topology.queues)
    if (deadLetterSettings(other).ttlMs === undefined && parkingQueueOf(topology, name) === queue)
      out.add(name);
  return [...out].sort();
}

/**
 * The other queues whose dead letters (by their arguments or a policy) can reach `queue`, sorted.
 * A delay queue (a TTL) is no such source: what it dead-letters is a retry coming back to its
 * business queue, not a message given up on.
 */
export function deadLetterSources(topology: Topology, queue: string): string[] {
  const out: string[] = [];
  for (const [name, other] of topology.queues) {
    if (name === queue || deadLetterSettings(other).ttlMs !== undefined) continue;
    if (deadLetterTargets(topology, name).includes(queue)) out.push(name);
  }
  return out.sort();
}

/** Queues named, plus every queue their dead letters can reach (the delay and parking queues). */
export function deadLetterClosure(topology: Topology, names: readonly string[]): string[] {
  const out: string[] = [];
  const queue = [...names];
  while (queue.length) {
    const name = queue.shift() as string;
    if (out.includes(name)) continue;
    out.push(name);
    queue.push(...deadLetterTargets(topology, name));
  }
  return out;
}
