import type { Channel, ChannelModel, GetMessage } from 'amqplib';
import { check, type Scenario, type StepRecorder } from '../../core/drill-framework.js';
import { closeQuietly, openChannel, openConfirmChannel } from './connection.js';
import { declareCopy, ScratchCopy } from './drill-copy.js';
import { deathCount, queueFindings } from './findings.js';
import type { ManagementApi } from './management.js';
import {
  deadLetterClosure,
  deadLetterSettings,
  ownRoutingKeys,
  parkingQueueOf,
  PARKING_NAMES,
  topologyOf,
  type Topology,
} from './topology.js';

export const DEAD_LETTER_SCENARIO = 'dead-letter-topology';
/** Delay TTLs are shortened to this on the scratch copies, so a drill of 3 retries takes seconds. */
export const DRILL_TTL_MS = 300;
/** How long past the TTL a rejected message may take to come back. */
const RETURN_GRACE_MS = 5000;
export interface TopologyDrillEnv {
  api: ManagementApi;
  connect(): Promise<ChannelModel>;
  runId: string;
  queue: string;
  maxRetries: number;
  parkingQueue?: string;
  ttlMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(ch: Channel, queue: string, ms: number): Promise<GetMessage | undefined> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const m = await ch.get(queue, { noAck: false });
    if (m) return m;
    await sleep(25);
  }
  return undefined;
}

function describeDeaths(m: GetMessage, copy: ScratchCopy): string {
  const deaths = m.properties.headers?.['x-death'];
  if (!Array.isArray(deaths)) return 'no x-death';
  return deaths
    .map(
      (d: { reason?: string; count?: number; queue?: string }) =>
        `${d.reason}×${d.count} (${String(d.queue).replace(`${copy.prefix}.q.`, '')})`,
    )
    .join(', ');
}

/**
 * The dead-letter drill: copies a queue's dead-letter path onto scratch queues (TTL shortened),
 * rejects a message maxRetries times checking that it comes back each time with a rising
 * x-death count, then parks it as the classic consumer does and checks it stays parked. Fails
 * where the topology drops the message. Scratch objects are removed afterwards (also on Ctrl-C).
 */
export const deadLetterTopology: Scenario<TopologyDrillEnv> = {
  name: DEAD_LETTER_SCENARIO,
  summary:
    'reject a message maxRetries times on a scratch copy of the retry topology: it comes back each time and ends parked',
  async run(steps: StepRecorder, env: TopologyDrillEnv) {
    const copy = new ScratchCopy(env.runId);
    const ttlMs = env.ttlMs ?? DRILL_TTL_MS;
    const cleanup = () => copy.remove(env.connect);
    const onSigint = () => void cleanup().finally(() => process.exit(130));
    process.once('SIGINT', onSigint);
    let topology: Topology | undefined;
    let chain: string[] = [];
    let parking: string | undefined;
    let connection: ChannelModel | undefined;
    let ch: Channel | undefined;
    let held: GetMessage | undefined;
    try {
      await steps.step(`read the dead-letter topology of '${env.queue}'`, async () => {
        const [queues, exchanges, bindings] = await Promise.all([
          env.api.queues(),
          env.api.exchanges(),
          env.api.bindings(),
        ]);
        topology = topologyOf(queues, exchanges, bindings);
        const q = topology.queues.get(env.queue);
        check(q, `queue '${env.queue}' does not exist`);
        const dl = deadLetterSettings(q);
        check(
          dl.exchange !== undefined,
          `'${env.queue}' has no dead-letter exchange: a rejected message is discarded, never retried`,
        );
        chain = deadLetterClosure(topology, [env.queue]);
        parking = parkingQueueOf(topology as Topology, env.queue, env.parkingQueue);
        return `${chain.join(' → ')}; parking queue ${parking ? `'${parking}'` : 'none found'}`;
      });
      await steps.step(`copy it onto scratch queues taskrecon-drill-${env.runId}.*`, async () => {
        connection = await env.connect();
        ch = await openChannel(connection);
        await declareCopy(ch, topology as Topology, parking ? [...chain, parking] : chain, copy, ttlMs);
        return `${copy.queues.length} queue(s), ${copy.exchanges.length} exchange(s); TTLs shortened to ${ttlMs} ms`;
      });
      await steps.step('publish a drill message (confirmed)', async () => {
        const pub = await openConfirmChannel(connection as ChannelModel);
        const key = deadLetterSettings(
          (topology as Topology).queues.get(env.queue) ?? { arguments: {}, policy: {} },
        ).routingKey
          ? env.queue
          : (ownRoutingKeys(topology as Topology, env.queue)[0] ?? env.queue);
        await ch?.bindQueue(copy.q(env.queue), copy.entry, key);
        pub.publish(copy.entry, key, Buffer.from(JSON.stringify({ drill: env.runId })), {
          persistent: true,
          messageId: `drill-${env.runId}`,
        });
        await pub.waitForConfirms();
        await closeQuietly(pub);
        held = await waitFor(ch as Channel, copy.q(env.queue), RETURN_GRACE_MS);
        check(held, `the drill message did not arrive in the copy of '${env.queue}'`);
        return `routing key '${key}'`;
      });
      for (let i = 1; i <= env.maxRetries; i++) {
        await steps.step(
          `rejection ${i} of ${env.maxRetries}: it comes back with x-death count ${i}`,
          async () => {
            const c = ch as Channel;
            const m = held as GetMessage;
            check(
              deathCount(m.properties.headers) === i - 1,
              `x-death count ${deathCount(m.properties.headers)} before rejection ${i}, expected ${i - 1}`,
            );
            const started = Date.now();
            c.nack(m, false, false);
            held = await waitFor(c, copy.q(env.queue), ttlMs + RETURN_GRACE_MS);
            if (!held) {
              const where: string[] = [];
              for (const name of copy.queues) {
                const ok = await c.checkQueue(name);
                if (ok.messageCount > 0) where.push(name.slice(copy.prefix.length + 3));
              }
              const why = chain
                .flatMap((n) =>
                  queueFindings('drill', topology as Topology, (topology as Topology).queues.get(n) as never),
                )
                .filter((f) => f.level === 'crit')
                .map((f) => f.message);
              check(
                false,
                where.length
                  ? `rejection ${i}: the message stopped in '${where.join("', '")}' and did not come back`
                  : `rejection ${i}: the message was dropped by the topology${why.length ? `: ${why.join('; ')}` : ''}`,
              );
            }
            const count = deathCount(held.properties.headers);
            check(count === i, `it came back with x-death count ${count}, expected ${i}`);
            return `back after ${Date.now() - started} ms; ${describeDeaths(held, copy)}`;
          },
        );
      }
      await steps.step(`after ${env.maxRetries} retries it ends in the parking queue`, async () => {
        check(
          parking,
          `no parking queue for '${env.queue}' (tried ${PARKING_NAMES.join(', ')}): exhausted messages have nowhere to go; name it with --parking-queue`,
        );
        const c = ch as Channel;
        const m = held as GetMessage;
        const pub = await openConfirmChannel(connection as ChannelModel);
        pub.publish(copy.x(''), parking, m.content, {
          ...m.properties,
          headers: m.properties.headers,
          persistent: true,
        });
        await pub.waitForConfirms();
        await closeQuietly(pub);
        c.ack(m);
        held = undefined;
        // Longer than any shortened TTL: a parking queue that discards or moves messages shows it now.
        await sleep(ttlMs * 3);
        const parked = await waitFor(c, copy.q(parking), RETURN_GRACE_MS);
        check(parked, `the message parked in '${parking}' did not stay there`);
        const count = deathCount(parked.properties.headers);
        c.nack(parked, false, true);
        check(
          count === env.maxRetries,
          `the parked message has x-death count ${count}, expected ${env.maxRetries}`,
        );
        return `parked in '${parking}' with ${describeDeaths(parked, copy)}`;
      });
    } finally {
      process.removeListener('SIGINT', onSigint);
      await closeQuietly(ch);
      await cleanup();
    }
  },
};
