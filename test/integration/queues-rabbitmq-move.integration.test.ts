import type { Channel, ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';
import { MOVED_RUN_HEADER } from '../../src/brokers/rabbitmq/move.js';
import type { MovedJob, MoveRequest } from '../../src/brokers/types.js';
import { depth, drainQueue, scratchVhost, until, type ScratchVhost } from '../support/rabbitmq.js';

let v: ScratchVhost;
let ch: Channel;

beforeAll(async () => {
  v = await scratchVhost('move');
  ch = await v.channel();
});
afterAll(async () => {
  await v?.drop();
});

/** `work` dead-letters straight into `parking`; both start empty for every case. */
beforeEach(async () => {
  for (const q of ['work', 'parking', 'other']) await ch.deleteQueue(q).catch(() => undefined);
  ch = await v.channel();
  await ch.assertQueue('parking', { durable: true });
  await ch.assertQueue('other', { durable: true });
  await ch.assertQueue('work', {
    durable: true,
    arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'parking' },
  });
});

/** Publishes n messages to `work` and rejects each once, so RabbitMQ parks them with a real x-death. */
async function park(n: number, extra: (i: number) => Record<string, unknown> = () => ({})): Promise<void> {
  for (let i = 0; i < n; i++)
    ch.sendToQueue('work', Buffer.from(JSON.stringify({ eventId: `evt-${i}` })), {
      persistent: true,
      messageId: `evt-${i}`,
      contentType: 'application/json',
      headers: { 'x-tenant': i % 2 === 0 ? 'even' : 'odd', ...extra(i) },
    });
  const rejecter = await (await v.connect()).createChannel();
  const { consumerTag } = await rejecter.consume('work', (m) => m && rejecter.nack(m, false, false));
  await until(async () => (await depth(ch, 'parking')) === n, 10_000, `${n} parked`);
  await rejecter.cancel(consumerTag);
  await rejecter.close();
}

function request(over: Partial<MoveRequest> & { moved?: MovedJob[] }): MoveRequest {
  const moved = over.moved ?? [];
  return {
    from: 'parking',
    to: 'work',
    what: 'ready',
    batch: 10,
    dryRun: false,
    runId: 'run-test',
    onBatch: async (jobs) => void moved.push(...jobs),
    shouldStop: () => false,
    ...over,
  };
}

async function move(req: MoveRequest) {
  const broker = openRabbitBroker('rabbit', { kind: 'rabbitmq', url: v.amqpUrl, api: v.apiUrl });
  try {
    return await broker.move(req);
  } finally {
    await broker.close();
  }
}

const drain = (queue: string): Promise<ConsumeMessage[]> => drainQueue(v, ch, queue);

const ids = (messages: ConsumeMessage[]) => messages.map((m) => String(m.properties.messageId));

describe('queues move on RabbitMQ', () => {
  it('replays N parked messages: a consumer receives exactly N distinct ones, the parking queue is empty', async () => {
    await park(25);
    const moved: MovedJob[] = [];
    const result = await move(request({ moved, resetDeath: true }));
    expect(result).toMatchObject({ from: 'parking', to: 'work', matched: 25, moved: 25, dryRun: false });
    expect(moved.map((j) => j.jobId).sort()).toEqual(Array.from({ length: 25 }, (_, i) => `evt-${i}`).sort());
    expect(await depth(ch, 'parking')).toBe(0);
    const got = await drain('work');
    expect(got).toHaveLength(25);
    expect(new Set(ids(got)).size).toBe(25);
    const first = got[0] as ConsumeMessage;
    // Properties and headers kept, x-death dropped with resetDeath, the run stamped.
    expect(first.properties.contentType).toBe('application/json');
    expect(first.properties.deliveryMode).toBe(2);
    expect(first.properties.headers?.['x-tenant']).toBeDefined();
    expect(first.properties.headers?.['x-death']).toBeUndefined();
    expect(first.properties.headers?.[MOVED_RUN_HEADER]).toBe('run-test');
  });

  it('keeps x-death without resetDeath', async () => {
    await park(1);
    await move(request({ to: 'other' }));
    const [m] = await drain('other');
    const deaths = m?.properties.headers?.['x-death'] as Array<{
      count: number;
      reason: string;
      queue: string;
    }>;
    expect(deaths[0]).toMatchObject({ count: 1, reason: 'rejected', queue: 'work' });
  });

  it('moves only messages matching a header or a body text, one pass, the rest left in order', async () => {
    await park(10);
    const byHeader = await move(
      request({ to: 'other', match: { header: { name: 'x-tenant', value: 'odd' } } }),
    );
    expect(byHeader).toMatchObject({ matched: 5, moved: 5 });
    expect(await depth(ch, 'parking')).toBe(5);
    const byBody = await move(request({ to: 'other', match: { body: '"evt-4"' } }));
    expect(byBody).toMatchObject({ matched: 1, moved: 1 });
    const none = await move(request({ to: 'other', match: { body: 'no such text' } }));
    expect(none).toMatchObject({ matched: 0, moved: 0 });
    expect(ids(await drain('parking'))).toEqual(['evt-0', 'evt-2', 'evt-6', 'evt-8']);
    expect(ids(await drain('other')).sort()).toEqual(['evt-1', 'evt-3', 'evt-4', 'evt-5', 'evt-7', 'evt-9']);
  });

  it('dry run counts and moves nothing; limit stops after N; an exchange and routing key are a target', async () => {
    await park(6);
    const moved: MovedJob[] = [];
    const dry = await move(request({ dryRun: true, moved }));
    expect(dry).toMatchObject({ dryRun: true, matched: 6, moved: 0 });
    expect(moved).toEqual([]);
    expect(await depth(ch, 'parking')).toBe(6);
    await ch.assertExchange('replay', 'direct', { durable: true });
    await ch.bindQueue('other', 'replay', 'again');
    const limited = await move(
      request({ to: undefined, toExchange: 'replay', routingKey: 'again', limit: 4 }),
    );
    expect(limited).toMatchObject({ matched: 4, moved: 4, to: "exchange 'replay' key 'again'" });
    expect(await depth(ch, 'parking')).toBe(2);
    expect(await depth(ch, 'other')).toBe(4);
  });

  it('ends its pass when a consumer empties the queue meanwhile: no message taken twice, none lost', async () => {
    await park(60);
    const rival = await (await v.connect()).createChannel();
    let consumed = 0;
    await rival.prefetch(5);
    await rival.consume('parking', (m) => {
      if (!m) return;
      consumed++;
      setTimeout(() => rival.ack(m), 5);
    });
    const result = await move(request({ to: 'other', batch: 5, ratePerSecond: 200 }));
    await until(async () => (await depth(ch, 'parking')) === 0, 10_000, 'the rival to finish');
    await rival.close();
    expect(result.moved + consumed).toBe(60);
    expect(await depth(ch, 'other')).toBe(result.moved);
  });

  it('refuses an exchange key that routes nowhere: nothing acked, the sources put back', async () => {
    await park(3);
    await ch.assertExchange('replay2', 'direct', { durable: true });
    await expect(
      move(request({ to: undefined, toExchange: 'replay2', routingKey: 'unbound' })),
    ).rejects.toThrow(/3 message\(s\) did not reach exchange 'replay2' key 'unbound' \(routed to no queue/);
    expect(await depth(ch, 'parking')).toBe(3);
  });
});
