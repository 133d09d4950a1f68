import type { ChannelModel, GetMessage } from 'amqplib';
import { usageError } from '../../errors.js';
import type { BrokerReport, QueueFinding, QueueStats } from '../types.js';
import { closeQuietly, isNotFound, openChannel, type AmqpTarget } from './connection.js';
import { exhaustedFinding, queueFindings, summarizeDeaths } from './findings.js';
import type { ManagementApi } from './management.js';
import { deliveryCount, isQuorum, quorumSettings, summarizeDeliveries } from './quorum.js';
import {
  deadLetterClosure,
  parkingQueueOf,
  topologyOf,
  type Topology,
  type TopologyQueue,
} from './topology.js';

/** What an inspection of one vhost needs. */
export interface InspectInput {
  broker: string;
  target: AmqpTarget;
  connection: ChannelModel;
  api: ManagementApi | undefined;
  /** Configured queues (undefined: every queue of the vhost, which needs the API). */
  queues: readonly string[] | undefined;
  maxRetries: number | undefined;
  peek: number;
}

export interface Peeked {
  headers: Array<Record<string, unknown> | undefined>;
  routingKeys: string[];
  /** Set when the peek stopped at the first message of a quorum queue (`stopAtQuorum`). */
  stoppedAtQuorum?: boolean;
}

/**
 * Gets up to `count` ready messages without acking them, then nacks them all back (requeue), so
 * the queue keeps every message; RabbitMQ marks them `redelivered`. The channel is closed before
 * anything else uses the connection, which flushes the nacks. On a quorum queue each return
 * counts as a delivery: with `stopAtQuorum` (the queue's type and delivery limit are unknown) the
 * peek stops at the first message that carries `x-delivery-count`.
 */
export async function peekQueue(
  connection: ChannelModel,
  queue: string,
  count: number,
  stopAtQuorum = false,
): Promise<Peeked> {
  const out: Peeked = { headers: [], routingKeys: [] };
  if (count <= 0) return out;
  const channel = await openChannel(connection);
  const held: GetMessage[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const message = await channel.get(queue, { noAck: false });
      if (!message) break;
      held.push(message);
      const headers = message.properties.headers as Record<string, unknown> | undefined;
      out.headers.push(headers);
      out.routingKeys.push(message.fields.routingKey);
      if (stopAtQuorum && deliveryCount(headers) !== undefined) {
        out.stoppedAtQuorum = true;
        break;
      }
    }
  } catch {
    // A queue another connection holds exclusively (or one deleted meanwhile) is not peeked; the
    // broker requeues whatever the closed channel held.
    held.length = 0;
  } finally {
    for (const message of held) channel.nack(message, false, true);
    await closeQuietly(channel);
  }
  return out;
}

/** Exact ready and consumer counts from a passive declare; undefined when the queue is gone or locked. */
export async function declareCounts(
  connection: ChannelModel,
  queue: string,
): Promise<{ ready: number; consumers: number } | 'not-found' | undefined> {
  const channel = await openChannel(connection);
  try {
    const ok = await channel.checkQueue(queue);
    return { ready: ok.messageCount, consumers: ok.consumerCount };
  } catch (error) {
    return isNotFound(error) ? 'not-found' : undefined;
  } finally {
    await closeQuietly(channel);
  }
}

async function apiTopology(api: ManagementApi): Promise<Topology> {
  await api.checkVhost();
  const [queues, exchanges, bindings] = await Promise.all([api.queues(), api.exchanges(), api.bindings()]);
  return topologyOf(queues, exchanges, bindings);
}

function missingQueue(input: InspectInput, name: string) {
  return usageError(
    `queue '${name}' does not exist in vhost '${input.target.vhost}' of ${input.target.display}`,
    `Check \`queues:\` of broker '${input.broker}' (names are case-sensitive).`,
  );
}

/** Counts, peeked dead-letter detail and findings of one broker's vhost. */
export async function inspectRabbit(
  input: InspectInput,
): Promise<{ report: BrokerReport; findings: QueueFinding[] }> {
  const notes: string[] = [];
  const findings: QueueFinding[] = [];
  const stats: QueueStats[] = [];
  let topology: Topology | undefined;
  let names: string[];
  if (input.api) {
    topology = await apiTopology(input.api);
    for (const name of input.queues ?? []) if (!topology.queues.has(name)) throw missingQueue(input, name);
    names = input.queues
      ? withParkingQueues(topology, deadLetterClosure(topology, input.queues))
      : [...topology.queues.keys()].filter((n) => !topology?.queues.get(n)?.exclusive).sort();
  } else {
    if (!input.queues?.length)
      throw usageError(
        `broker '${input.broker}' has neither \`api:\` nor \`queues:\`: over AMQP alone queues cannot be listed`,
        'Give the management API (`api: http://user:pass@host:15672`, or --api) or name the queues (`queues:`).',
      );
    names = [...input.queues];
    notes.push(
      'no management API: unacked, durability, arguments and bindings are unknown, so ttl-without-dlx, dlx-unroutable, not-durable, ttl-long, parked-messages, no-delivery-limit and dlx-at-most-once are not checked (give `api:` or --api)',
    );
  }
  for (const name of names) {
    const declared = await declareCounts(input.connection, name);
    if (declared === 'not-found') throw missingQueue(input, name);
    const known: TopologyQueue | undefined = topology?.queues.get(name);
    const ready = declared?.ready ?? known?.ready ?? null;
    const consumers = declared?.consumers ?? known?.consumers ?? null;
    const peeked = await peekSample(input, name, ready, known, notes);
    const deliveries = summarizeDeliveries(peeked.headers);
    stats.push({
      name,
      ready,
      delayed: null,
      delayedOverdue: null,
      oldestOverdueSeconds: null,
      reserved: null,
      reservedExpired: null,
      unacked: known?.unacked ?? null,
      consumers,
      durable: known?.durable ?? null,
      arguments: known ? reportedArguments(known) : null,
      deadLettered: summarizeDeaths(peeked.headers),
      deliveries,
    });
    if (topology && known)
      findings.push(
        ...queueFindings(
          input.broker,
          topology,
          { ...known, ready, consumers },
          peeked.routingKeys,
          deliveries,
        ),
      );
    else if ((ready ?? 0) > 0 && consumers === 0)
      findings.push(
        ...queueFindings(input.broker, topologyOf([], [], []), {
          name,
          durable: true,
          exclusive: false,
          autoDelete: false,
          arguments: {},
          policy: {},
          ready,
          unacked: null,
          consumers,
        }),
      );
    const exhausted = exhaustedFinding(input.broker, name, peeked.headers, input.maxRetries);
    if (exhausted) findings.push(exhausted);
  }
  const report: BrokerReport = {
    name: input.broker,
    kind: 'rabbitmq',
    framework: null,
    url: input.target.display,
    queues: stats,
  };
  if (notes.length) report.notes = notes;
  return { report, findings };
}

/**
 * The peeked sample of one queue. A quorum queue with a delivery limit is not peeked: a message
 * returned by the peek spends one of its deliveries, and one on its last delivery would be
 * dead-lettered (or dropped) by the peek itself. Without the API the queue's type is unknown, so
 * the peek stops at the first message that shows it comes from a quorum queue.
 */
async function peekSample(
  input: InspectInput,
  name: string,
  ready: number | null,
  known: TopologyQueue | undefined,
  notes: string[],
): Promise<Peeked> {
  const none: Peeked = { headers: [], routingKeys: [] };
  if (!ready || input.peek <= 0) return none;
  if (known && isQuorum(known) && quorumSettings(known).deliveryLimit !== undefined) {
    notes.push(
      `quorum queue '${name}' was not peeked: it has a delivery limit, and each peeked message would spend one of its deliveries`,
    );
    return none;
  }
  const peeked = await peekQueue(input.connection, name, input.peek, known === undefined);
  if (peeked.stoppedAtQuorum)
    notes.push(
      `'${name}' is a quorum queue: the peek stopped at its first message, since without the management API its delivery limit is unknown`,
    );
  return peeked;
}

/** The queue's own arguments, plus what a policy sets, as `policy:<key>`. */
function reportedArguments(queue: TopologyQueue): Record<string, unknown> {
  const out: Record<string, unknown> = { ...queue.arguments };
  for (const [key, value] of Object.entries(queue.policy)) out[`policy:${key}`] = value;
  return out;
}

/** The queues named plus the parking queue of each (by name: where its consumer parks what it gives up on). */
function withParkingQueues(topology: Topology, names: readonly string[]): string[] {
  const out = [...names];
  for (const name of names) {
    const parking = parkingQueueOf(topology, name);
    if (parking !== undefined && !out.includes(parking)) out.push(parking);
  }
  return out;
}
