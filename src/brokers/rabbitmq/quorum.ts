import { finding, type Deliveries, type QueueFinding } from '../types.js';
import { deadLetterSettings, type TopologyQueue } from './topology.js';

/**
 * The rules of a quorum queue (`x-queue-type: quorum`), as RabbitMQ 3.10 applies them: a quorum
 * queue is always durable and never exclusive (the broker refuses both at declare), it takes
 * `x-message-ttl` like a classic queue, and it counts deliveries: every message it hands out
 * again carries `x-delivery-count` (0 on the first delivery), and every return — a nack or reject
 * with requeue, or the channel closing on unacked messages — adds one. With `x-delivery-limit` N a
 * message returned when its count is already N is dead-lettered (or dropped without a dead-letter
 * exchange); without one, a message its consumer cannot handle comes back forever.
 */

export interface QuorumSettings {
  /** undefined: no limit, a poison message is redelivered forever. */
  deliveryLimit: number | undefined;
  /** 'at-most-once' unless set; at-least-once only holds with overflow reject-publish. */
  deadLetterStrategy: string;
  /** 'drop-head' unless set. */
  overflow: string;
  /** Which of the settings came from a policy rather than the queue's arguments. */
  fromPolicy: Array<'deliveryLimit' | 'deadLetterStrategy' | 'overflow'>;
}

/** Whether the queue is a quorum queue (the type is an argument only; a policy cannot set it). */
export function isQuorum(queue: Pick<TopologyQueue, 'arguments'>): boolean {
  return queue.arguments['x-queue-type'] === 'quorum';
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * A quorum queue's effective settings. The delivery limit is the lower of argument and policy;
 * the overflow behaviour and the dead-letter strategy are the argument's, else the policy's.
 */
export function quorumSettings(queue: Pick<TopologyQueue, 'arguments' | 'policy'>): QuorumSettings {
  const fromPolicy: QuorumSettings['fromPolicy'] = [];
  const argLimit = num(queue.arguments['x-delivery-limit']);
  const policyLimit = num(queue.policy['delivery-limit']);
  let deliveryLimit = argLimit;
  if (policyLimit !== undefined && (argLimit === undefined || policyLimit < argLimit)) {
    deliveryLimit = policyLimit;
    fromPolicy.push('deliveryLimit');
  }
  const pick = (arg: string, policy: string, what: 'deadLetterStrategy' | 'overflow') => {
    const a = str(queue.arguments[arg]);
    if (a !== undefined) return a;
    const p = str(queue.policy[policy]);
    if (p !== undefined) fromPolicy.push(what);
    return p;
  };
  const deadLetterStrategy =
    pick('x-dead-letter-strategy', 'dead-letter-strategy', 'deadLetterStrategy') ?? 'at-most-once';
  const overflow = pick('x-overflow', 'overflow', 'overflow') ?? 'drop-head';
  return { deliveryLimit, deadLetterStrategy, overflow, fromPolicy };
}

/**
 * The findings only a quorum queue has: `no-delivery-limit` (a poison message comes back
 * forever) and `dlx-at-most-once` (at-least-once dead-lettering asked for, but without
 * overflow reject-publish RabbitMQ falls back to at-most-once: a dead letter that cannot be
 * routed is dropped). `deliveries` is the peeked sample's delivery counts, named in the message.
 */
export function quorumFindings(
  broker: string,
  queue: TopologyQueue,
  deliveries: Deliveries | null = null,
): QueueFinding[] {
  if (!isQuorum(queue)) return [];
  const out: QueueFinding[] = [];
  const q = quorumSettings(queue);
  const via = (what: QuorumSettings['fromPolicy'][number]) =>
    q.fromPolicy.includes(what) ? ' (from a policy)' : '';
  if (q.deliveryLimit === undefined) {
    const seen =
      deliveries && deliveries.maxDeliveryCount > 0
        ? `; a peeked message had come back ${deliveries.maxDeliveryCount} time(s) already`
        : '';
    out.push(
      finding(
        'no-delivery-limit',
        broker,
        queue.name,
        queue.ready,
        `quorum queue '${queue.name}' has no delivery limit: a message its consumer cannot handle is redelivered forever${seen}`,
        `Declare it with x-delivery-limit (or a policy with delivery-limit), and a dead-letter exchange so that a message past the limit is parked, not dropped.`,
      ),
    );
  }
  const dl = deadLetterSettings(queue);
  if (
    dl.exchange !== undefined &&
    q.deadLetterStrategy === 'at-least-once' &&
    q.overflow !== 'reject-publish'
  ) {
    out.push(
      finding(
        'dlx-at-most-once',
        broker,
        queue.name,
        queue.ready,
        `quorum queue '${queue.name}' asks for at-least-once dead-lettering${via('deadLetterStrategy')} with overflow '${q.overflow}'${via('overflow')}: RabbitMQ falls back to at-most-once, so a dead letter that cannot be routed is dropped`,
        `Add x-overflow: reject-publish (or a policy with overflow: reject-publish); a queue's arguments cannot change, so declare a new queue and move the messages with queues move.`,
      ),
    );
  }
  return out;
}

/** The delivery count RabbitMQ wrote on one peeked message; undefined on a classic queue's. */
export function deliveryCount(headers: Record<string, unknown> | undefined): number | undefined {
  return num(headers?.['x-delivery-count']);
}

/** Sums up the `x-delivery-count` headers of a peeked sample; null when none carries one. */
export function summarizeDeliveries(
  sample: ReadonlyArray<Record<string, unknown> | undefined>,
): Deliveries | null {
  const counts = sample.map(deliveryCount).filter((n): n is number => n !== undefined);
  if (counts.length === 0) return null;
  return { redelivered: counts.filter((n) => n > 0).length, maxDeliveryCount: Math.max(...counts) };
}
