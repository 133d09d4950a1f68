import type { Channel, ChannelModel } from 'amqplib';
import { closeQuietly, openChannel } from './connection.js';
import { deadLetterSettings, type Topology } from './topology.js';

/** Scratch queues left behind (a killed drill) delete themselves after this long unused. */
const SCRATCH_EXPIRES_MS = 10 * 60_000;

/** The scratch objects of one run: a copy of each queue and exchange on the dead-letter path. */
export class ScratchCopy {
  readonly prefix: string;
  readonly queues: string[] = [];
  readonly exchanges: string[] = [];
  constructor(runId: string) {
    this.prefix = `taskrecon-drill-${runId}`;
  }
  q(name: string): string {
    return `${this.prefix}.q.${name}`;
  }
  x(name: string): string {
    return name === '' ? `${this.prefix}.default` : `${this.prefix}.x.${name}`;
  }
  get entry(): string {
    return `${this.prefix}.entry`;
  }
  private removing: Promise<void> | undefined;

  /**
   * Deletes every scratch object. A second call (Ctrl-C while the drill's own cleanup runs, or
   * the other way round) waits for the removal under way, so the connection is not closed under it.
   */
  remove(connect: () => Promise<ChannelModel>): Promise<void> {
    this.removing ??= this.removeAll(connect);
    return this.removing;
  }

  private async removeAll(connect: () => Promise<ChannelModel>): Promise<void> {
    const connection = await connect().catch(() => undefined);
    if (!connection) return;
    const drop = async (what: (ch: Channel) => Promise<unknown>) => {
      const ch = await openChannel(connection).catch(() => undefined);
      if (!ch) return;
      await what(ch).catch(() => undefined);
      await closeQuietly(ch);
    };
    for (const name of this.queues) await drop((ch) => ch.deleteQueue(name));
    for (const name of this.exchanges) await drop((ch) => ch.deleteExchange(name));
  }
}

/** Exchanges a queue's dead letters can pass through: its DLX, exchange-to-exchange bindings, alternates. */
function pathExchanges(topology: Topology, queues: readonly string[]): string[] {
  const out = new Set<string>();
  const todo = queues.map(
    (q) => deadLetterSettings(topology.queues.get(q) ?? { arguments: {}, policy: {} }).exchange,
  );
  while (todo.length) {
    const name = todo.shift();
    if (name === undefined || name === '' || out.has(name) || !topology.exchanges.has(name)) continue;
    out.add(name);
    for (const b of topology.bindings)
      if (b.source === name && b.destinationType === 'exchange') todo.push(b.destination);
    const alt = topology.exchanges.get(name)?.arguments['alternate-exchange'];
    if (typeof alt === 'string') todo.push(alt);
  }
  return [...out];
}

export async function declareCopy(
  ch: Channel,
  topology: Topology,
  queues: string[],
  copy: ScratchCopy,
  ttlMs: number,
): Promise<void> {
  const exchanges = pathExchanges(topology, queues);
  for (const name of exchanges) {
    const ex = topology.exchanges.get(name);
    if (!ex) continue;
    const args = { ...ex.arguments };
    if (typeof args['alternate-exchange'] === 'string')
      args['alternate-exchange'] = copy.x(args['alternate-exchange']);
    await ch.assertExchange(copy.x(name), ex.type, { durable: ex.durable, arguments: args });
    copy.exchanges.push(copy.x(name));
  }
  // The default exchange routes to real queues by name: the copy routes through a direct exchange instead.
  await ch.assertExchange(copy.x(''), 'direct', { durable: false });
  copy.exchanges.push(copy.x(''));
  await ch.assertExchange(copy.entry, 'direct', { durable: false });
  copy.exchanges.push(copy.entry);
  for (const name of queues) {
    const q = topology.queues.get(name);
    if (!q) continue;
    const dl = deadLetterSettings(q);
    const args: Record<string, unknown> = { ...q.arguments };
    for (const k of ['x-dead-letter-exchange', 'x-dead-letter-routing-key', 'x-message-ttl']) delete args[k];
    if (dl.exchange !== undefined) args['x-dead-letter-exchange'] = copy.x(dl.exchange);
    if (dl.exchange !== undefined && dl.routingKey !== undefined)
      args['x-dead-letter-routing-key'] = dl.routingKey;
    if (dl.ttlMs !== undefined) args['x-message-ttl'] = Math.min(dl.ttlMs, ttlMs);
    const expires = typeof args['x-expires'] === 'number' ? args['x-expires'] : SCRATCH_EXPIRES_MS;
    args['x-expires'] = Math.min(expires, SCRATCH_EXPIRES_MS);
    await ch.assertQueue(copy.q(name), { durable: q.durable, arguments: args });
    copy.queues.push(copy.q(name));
    await ch.bindQueue(copy.q(name), copy.x(''), name);
  }
  for (const b of topology.bindings) {
    if (!exchanges.includes(b.source)) continue;
    if (b.destinationType === 'queue' && queues.includes(b.destination))
      await ch.bindQueue(copy.q(b.destination), copy.x(b.source), b.routingKey, b.arguments);
    if (b.destinationType === 'exchange' && exchanges.includes(b.destination))
      await ch.bindExchange(copy.x(b.destination), copy.x(b.source), b.routingKey, b.arguments);
  }
}
