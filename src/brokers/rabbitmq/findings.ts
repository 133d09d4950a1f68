import { finding, type DeadLettered, type Deliveries, type QueueFinding } from '../types.js';
import { quorumFindings } from './quorum.js';
import {
  deadLetterSettings,
  parkingSources,
  ownRoutingKeys,
  route,
  type Topology,
  type TopologyQueue,
} from './topology.js';

/**
 * A delay TTL longer than this holds messages in the broker for long enough that a restart or a
 * stuck consumer turns into a pile nobody sees: half an hour, the longest retry step the classic
 * design itself calls too long.
 */
export const TTL_LONG_MS = 30 * 60_000;

function ms(value: number): string {
  return value >= 60_000 ? `${value} ms (${Math.round(value / 60_000)} min)` : `${value} ms`;
}

/**
 * The topology findings of one queue: `ttl-without-dlx`, `dlx-unroutable`, `not-durable`,
 * `ttl-long`, `no-consumers`, `parked-messages`, and a quorum queue's `no-delivery-limit` and
 * `dlx-at-most-once`. `sampleKeys` are the routing keys of peeked messages (used when the queue
 * sets no dead-letter routing key), `deliveries` their delivery counts.
 */
export function queueFindings(
  broker: string,
  topology: Topology,
  queue: TopologyQueue,
  sampleKeys: readonly string[] = [],
  deliveries: Deliveries | null = null,
): QueueFinding[] {
  const out: QueueFinding[] = [];
  const dl = deadLetterSettings(queue);
  const via = (what: 'exchange' | 'routingKey' | 'ttl') =>
    dl.fromPolicy.includes(what) ? ' (from a policy)' : '';
  if (dl.ttlMs !== undefined && dl.exchange === undefined) {
    out.push(
      finding(
        'ttl-without-dlx',
        broker,
        queue.name,
        queue.ready,
        `queue '${queue.name}' has a message TTL of ${ms(dl.ttlMs)}${via('ttl')} and no dead-letter exchange: every message that expires there is discarded`,
        `Declare it with x-dead-letter-exchange (and x-dead-letter-routing-key) leading back to the business queue, or set a policy with dead-letter-exchange.`,
      ),
    );
  }
  if (dl.exchange !== undefined) {
    const keys =
      dl.routingKey !== undefined ? [dl.routingKey] : ownRoutingKeys(topology, queue.name, sampleKeys);
    const exName = dl.exchange === '' ? 'the default exchange' : `'${dl.exchange}'`;
    const nonDurable = new Set<string>();
    for (const key of keys) {
      const routed = route(topology, dl.exchange, key);
      routed.nonDurableExchanges.forEach((e) => nonDurable.add(e));
      if (routed.missingExchange !== undefined) {
        out.push(
          finding(
            'dlx-unroutable',
            broker,
            queue.name,
            queue.ready,
            `queue '${queue.name}' dead-letters to exchange '${routed.missingExchange}'${via('exchange')}, which does not exist: its dead letters are dropped`,
            `Declare the exchange '${routed.missingExchange}' (durable) and bind the delay or parking queue to it.`,
          ),
        );
        break;
      }
      if (routed.queues.length === 0) {
        out.push(
          finding(
            'dlx-unroutable',
            broker,
            queue.name,
            queue.ready,
            `queue '${queue.name}' dead-letters to ${exName} with routing key '${key}'${dl.routingKey !== undefined ? via('routingKey') : " (the message's own)"}, and no binding matches it: its dead letters are dropped`,
            dl.exchange === ''
              ? `Name an existing queue as x-dead-letter-routing-key.`
              : `Bind a queue to '${dl.exchange}' with the key '${key}', or set x-dead-letter-routing-key to a key that is bound.`,
          ),
        );
      }
    }
    for (const name of nonDurable) {
      out.push(
        finding(
          'not-durable',
          broker,
          queue.name,
          null,
          `queue '${queue.name}' dead-letters through exchange '${name}', which is not durable: after a broker restart its dead letters are dropped`,
          `Re-declare '${name}' as durable (delete it and declare it again with durable: true).`,
        ),
      );
    }
  }
  if (!queue.durable && !queue.exclusive) {
    out.push(
      finding(
        'not-durable',
        broker,
        queue.name,
        queue.ready,
        `queue '${queue.name}' is not durable: it and its messages are lost when the broker restarts`,
        `Re-declare it as durable (a queue's durability cannot change: declare a new one and move the messages with queues move).`,
      ),
    );
  }
  if (dl.ttlMs !== undefined && dl.ttlMs > TTL_LONG_MS) {
    out.push(
      finding(
        'ttl-long',
        broker,
        queue.name,
        queue.ready,
        `queue '${queue.name}' holds messages for ${ms(dl.ttlMs)}${via('ttl')} before they move on`,
        `Keep delay TTLs at ${TTL_LONG_MS / 60_000} min or less; longer retries belong in the task table's next_retry_time, not in the broker.`,
      ),
    );
  }
  const isDelayQueue = dl.ttlMs !== undefined && dl.exchange !== undefined;
  const unconsumed = !isDelayQueue && (queue.ready ?? 0) > 0 && queue.consumers === 0;
  // A queue whose messages expire is a delay queue (or a lossy one, flagged above), never a parking queue.
  const sources = unconsumed && dl.ttlMs === undefined ? parkingSources(topology, queue.name) : [];
  if (unconsumed && sources.length > 0) {
    const from = sources.map((s) => `'${s}'`).join(', ');
    out.push(
      finding(
        'parked-messages',
        broker,
        queue.name,
        queue.ready,
        `queue '${queue.name}' holds ${queue.ready} message(s) given up on by ${from}, and no consumer reads it: they wait for a person`,
        `Look at them (\`taskrecon queues --broker ${broker} --peek 10\`), fix why they failed, then send them back with \`taskrecon queues move --broker ${broker} --from ${queue.name} --to ${sources[0]} --reset-death --reason "…"\`; or attach a consumer that handles parked messages.`,
      ),
    );
  } else if (unconsumed) {
    out.push(
      finding(
        'no-consumers',
        broker,
        queue.name,
        queue.ready,
        `queue '${queue.name}' has ${queue.ready} ready message(s) and no consumer`,
        `Start its consumers (check they are not stuck or disconnected), or move the messages with queues move.`,
      ),
    );
  }
  out.push(...quorumFindings(broker, queue, deliveries));
  return out;
}

/** One x-death entry as RabbitMQ writes it (amqplib decodes the table). */
interface XDeathEntry {
  count?: unknown;
  reason?: unknown;
  queue?: unknown;
}

/** The highest x-death count of one message (0 when it was never dead-lettered). */
export function deathCount(headers: Record<string, unknown> | undefined): number {
  const deaths = headers?.['x-death'];
  if (!Array.isArray(deaths)) return 0;
  return Math.max(0, ...deaths.map((d: XDeathEntry) => (typeof d.count === 'number' ? d.count : 0)));
}

/** Sums up the x-death headers of a peeked sample; null when nothing was peeked. */
export function summarizeDeaths(
  sample: ReadonlyArray<Record<string, unknown> | undefined>,
): DeadLettered | null {
  if (sample.length === 0) return null;
  const byReason: Record<string, number> = {};
  const sources = new Set<string>();
  let count = 0;
  let maxDeathCount = 0;
  for (const headers of sample) {
    const deaths = headers?.['x-death'];
    if (!Array.isArray(deaths) || deaths.length === 0) continue;
    count++;
    for (const d of deaths as XDeathEntry[]) {
      const n = typeof d.count === 'number' ? d.count : 0;
      const reason = typeof d.reason === 'string' ? d.reason : 'unknown';
      byReason[reason] = (byReason[reason] ?? 0) + n;
      if (typeof d.queue === 'string') sources.add(d.queue);
      maxDeathCount = Math.max(maxDeathCount, n);
    }
  }
  return { count, maxDeathCount, byReason, sourceQueues: [...sources].sort() };
}

/** `retry-exhausted`: peeked messages whose x-death count reached `maxRetries`. */
export function exhaustedFinding(
  broker: string,
  queue: string,
  sample: ReadonlyArray<Record<string, unknown> | undefined>,
  maxRetries: number | undefined,
): QueueFinding | undefined {
  if (maxRetries === undefined) return undefined;
  const exhausted = sample.filter((h) => deathCount(h) >= maxRetries).length;
  if (exhausted === 0) return undefined;
  return finding(
    'retry-exhausted',
    broker,
    queue,
    exhausted,
    `${exhausted} of ${sample.length} peeked message(s) in '${queue}' were dead-lettered ${maxRetries} time(s) or more (maxRetries ${maxRetries})`,
    `Look at why they keep failing (\`taskrecon queues --peek 10\`), then park them or move them back with queues move --reset-death.`,
  );
}
