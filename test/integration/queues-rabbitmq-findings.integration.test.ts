import type { Channel } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';
import type { QueueFinding } from '../../src/brokers/types.js';
import {
  api,
  declareArticleTopology,
  declareCorrectTopology,
  depth,
  scratchVhost,
  until,
  type ScratchVhost,
} from '../support/rabbitmq.js';

/** A scratch vhost per case (deleted afterwards, also when the case fails), so each topology stands alone. */
async function withVhost<T>(label: string, fn: (v: ScratchVhost, ch: Channel) => Promise<T>): Promise<T> {
  const v = await scratchVhost(label);
  try {
    return await fn(v, await v.channel());
  } finally {
    await v.drop();
  }
}

async function inspect(
  v: ScratchVhost,
  options: { queues?: string[]; maxRetries?: number; peek?: number; api?: boolean } = {},
) {
  const broker = openRabbitBroker('rabbit', {
    kind: 'rabbitmq',
    url: v.amqpUrl,
    api: options.api === false ? undefined : v.apiUrl,
    queues: options.queues,
    maxRetries: options.maxRetries,
  });
  try {
    return await broker.inspect({ peek: options.peek ?? 10, nowEpoch: Math.floor(Date.now() / 1000) });
  } finally {
    await broker.close();
  }
}

const codes = (findings: QueueFinding[]) => findings.map((f) => `${f.code}:${f.queue}`).sort();

describe('RabbitMQ topology findings', () => {
  it('flags the article topology as written: the delay queue has a TTL and no dead-letter exchange', async () => {
    await withVhost('article', async (v, ch) => {
      await declareArticleTopology(ch);
      const { report, findings } = await inspect(v, { queues: ['business_queue'] });
      expect(codes(findings)).toEqual(['ttl-without-dlx:retry_queue']);
      expect(findings[0]?.level).toBe('crit');
      // The delay queue is inspected because the business queue dead-letters into it.
      expect(report.queues.map((q) => q.name)).toEqual(['business_queue', 'retry_queue']);
      const retry = report.queues[1];
      expect(retry?.arguments).toEqual({ 'x-message-ttl': 10000 });
      expect(retry?.durable).toBe(true);
      expect(report.url).toContain('guest:***@');
    });
  });

  it('finds nothing on the corrected topology, also with a message waiting in the delay queue', async () => {
    await withVhost('correct', async (v, ch) => {
      await declareCorrectTopology(ch, 60_000);
      ch.sendToQueue('retry_queue', Buffer.from('{"eventId":"e1"}'), { persistent: true });
      await until(async () => (await depth(ch, 'retry_queue')) === 1);
      const { findings, report } = await inspect(v, { maxRetries: 3 });
      expect(findings).toEqual([]);
      expect(report.queues.find((q) => q.name === 'retry_queue')?.ready).toBe(1);
    });
  });

  it('dlx-unroutable: a missing dead-letter exchange, and one no binding of which matches the key', async () => {
    await withVhost('unroutable', async (v, ch) => {
      await ch.assertQueue('missing_dlx', {
        durable: true,
        arguments: { 'x-dead-letter-exchange': 'nowhere' },
      });
      await ch.assertExchange('dlx', 'direct', { durable: true });
      await ch.assertQueue('parked', { durable: true });
      await ch.bindQueue('parked', 'dlx', 'parked');
      await ch.assertQueue('wrong_key', {
        durable: true,
        arguments: { 'x-dead-letter-exchange': 'dlx', 'x-dead-letter-routing-key': 'parking' },
      });
      await ch.assertQueue('right_key', {
        durable: true,
        arguments: { 'x-dead-letter-exchange': 'dlx', 'x-dead-letter-routing-key': 'parked' },
      });
      // The default exchange routes to the queue of that name: 'parked' exists, 'parkd' does not.
      await ch.assertQueue('default_ok', {
        durable: true,
        arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'parked' },
      });
      await ch.assertQueue('default_typo', {
        durable: true,
        arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'parkd' },
      });
      const { findings } = await inspect(v);
      expect(codes(findings)).toEqual([
        'dlx-unroutable:default_typo',
        'dlx-unroutable:missing_dlx',
        'dlx-unroutable:wrong_key',
      ]);
      expect(findings.every((f) => f.level === 'crit')).toBe(true);
      expect(findings.find((f) => f.queue === 'missing_dlx')?.message).toContain(
        "'nowhere', which does not exist",
      );
    });
  });

  it("dlx-unroutable follows the message's own routing key through topic bindings when no dead-letter key is set", async () => {
    await withVhost('ownkey', async (v, ch) => {
      await ch.assertExchange('orders', 'direct', { durable: true });
      await ch.assertExchange('dlx', 'topic', { durable: true });
      await ch.assertQueue('order_dead', { durable: true });
      await ch.bindQueue('order_dead', 'dlx', 'order.#');
      await ch.assertQueue('orders_ok', { durable: true, arguments: { 'x-dead-letter-exchange': 'dlx' } });
      await ch.bindQueue('orders_ok', 'orders', 'order.created');
      await ch.assertQueue('payments', { durable: true, arguments: { 'x-dead-letter-exchange': 'dlx' } });
      await ch.bindQueue('payments', 'orders', 'payment.paid');
      const { findings } = await inspect(v);
      expect(codes(findings)).toEqual(['dlx-unroutable:payments']);
      expect(findings[0]?.message).toContain("routing key 'payment.paid'");
    });
  });

  it('not-durable: a transient queue, and a transient exchange its dead letters pass through', async () => {
    await withVhost('durable', async (v, ch) => {
      await ch.assertQueue('transient', { durable: false });
      await ch.assertExchange('soft_dlx', 'fanout', { durable: false });
      await ch.assertQueue('sink', { durable: true });
      await ch.bindQueue('sink', 'soft_dlx', '');
      await ch.assertQueue('via_soft', {
        durable: true,
        arguments: { 'x-dead-letter-exchange': 'soft_dlx' },
      });
      const { findings } = await inspect(v);
      expect(codes(findings)).toEqual(['not-durable:transient', 'not-durable:via_soft']);
      expect(findings.find((f) => f.queue === 'via_soft')?.message).toContain("exchange 'soft_dlx'");
    });
  });

  it('ttl-long: a delay TTL over 30 minutes; 30 minutes exactly is fine', async () => {
    await withVhost('ttllong', async (v, ch) => {
      await ch.assertQueue('slow_delay', {
        durable: true,
        arguments: {
          'x-message-ttl': 30 * 60_000 + 1,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': 'work',
        },
      });
      await ch.assertQueue('ok_delay', {
        durable: true,
        arguments: {
          'x-message-ttl': 30 * 60_000,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': 'work',
        },
      });
      await ch.assertQueue('work', { durable: true });
      const { findings } = await inspect(v);
      expect(codes(findings)).toEqual(['ttl-long:slow_delay']);
      expect(findings[0]?.level).toBe('warn');
    });
  });

  it('no-consumers: ready messages and nobody consuming; none once a consumer is attached', async () => {
    await withVhost('consumers', async (v, ch) => {
      await ch.assertQueue('work', { durable: true });
      ch.sendToQueue('work', Buffer.from('x'));
      ch.sendToQueue('work', Buffer.from('y'));
      await until(async () => (await depth(ch, 'work')) === 2);
      const first = await inspect(v);
      expect(codes(first.findings)).toEqual(['no-consumers:work']);
      expect(first.findings[0]?.count).toBe(2);
      const consumer = await (await v.connect()).createChannel();
      await consumer.prefetch(1);
      await consumer.consume('work', () => undefined, { noAck: false });
      const second = await inspect(v);
      expect(second.findings).toEqual([]);
      await consumer.close();
    });
  });

  it('parked-messages: dead letters a rejecting consumer parked, with no consumer on the parking queue; none once consumed or empty', async () => {
    await withVhost('parked', async (v, ch) => {
      await ch.assertExchange('dlx', 'direct', { durable: true });
      await ch.assertQueue('parking', { durable: true });
      await ch.bindQueue('parking', 'dlx', 'dead');
      await ch.assertQueue('work', {
        durable: true,
        arguments: { 'x-dead-letter-exchange': 'dlx', 'x-dead-letter-routing-key': 'dead' },
      });
      const empty = await inspect(v, { queues: ['work'] });
      expect(codes(empty.findings)).toEqual([]);
      for (let i = 0; i < 3; i++) ch.sendToQueue('work', Buffer.from(`m${i}`), { persistent: true });
      const rejecter = await (await v.connect()).createChannel();
      const { consumerTag } = await rejecter.consume('work', (m) => m && rejecter.nack(m, false, false));
      await until(async () => (await depth(ch, 'parking')) === 3, 10_000, 'three parked');
      await rejecter.cancel(consumerTag);
      await rejecter.close();
      // Only the business queue is configured: the parking queue is found through its dead-letter wiring.
      const parked = await inspect(v, { queues: ['work'] });
      expect(parked.report.queues.map((q) => q.name)).toEqual(['work', 'parking']);
      expect(codes(parked.findings)).toEqual(['parked-messages:parking']);
      expect(parked.findings[0]).toMatchObject({ level: 'warn', count: 3 });
      expect(parked.findings[0]?.hint).toContain('--from parking --to work --reset-death');
      const consumer = await (await v.connect()).createChannel();
      await consumer.prefetch(1);
      await consumer.consume('parking', () => undefined, { noAck: false });
      expect((await inspect(v, { queues: ['work'] })).findings).toEqual([]);
      await consumer.close();
    });
  });

  it("parked-messages: the corrected topology's parking queue, where the consumer parks what it gives up on, is listed and flagged", async () => {
    await withVhost('parkedbyname', async (v, ch) => {
      await declareCorrectTopology(ch, 60_000);
      for (let i = 0; i < 3; i++)
        ch.sendToQueue('parking_queue', Buffer.from(`dead${i}`), { persistent: true });
      await until(async () => (await depth(ch, 'parking_queue')) === 3);
      const { report, findings } = await inspect(v, { queues: ['business_queue'] });
      expect(report.queues.map((q) => q.name)).toEqual(['business_queue', 'retry_queue', 'parking_queue']);
      expect(codes(findings)).toEqual(['parked-messages:parking_queue']);
      expect(findings[0]?.message).toContain("given up on by 'business_queue'");
    });
  });

  it('honours policies: a TTL set by policy without a dead-letter exchange is flagged; a policy adding one clears it', async () => {
    await withVhost('policy', async (v, ch) => {
      await ch.assertQueue('delay_by_policy', { durable: true });
      const path = `/policies/${encodeURIComponent(v.vhost)}/ttl`;
      await api('PUT', path, {
        pattern: '^delay_',
        definition: { 'message-ttl': 5000 },
        'apply-to': 'queues',
      });
      await until(async () => (await inspect(v)).findings.length > 0, 15_000, 'the TTL policy to apply');
      const flagged = await inspect(v);
      expect(codes(flagged.findings)).toEqual(['ttl-without-dlx:delay_by_policy']);
      expect(flagged.findings[0]?.message).toContain('from a policy');
      await ch.assertQueue('work', { durable: true });
      await api('PUT', path, {
        pattern: '^delay_',
        definition: { 'message-ttl': 5000, 'dead-letter-exchange': '', 'dead-letter-routing-key': 'work' },
        'apply-to': 'queues',
      });
      await until(
        async () => (await inspect(v)).findings.length === 0,
        15_000,
        'the dead-letter policy to apply',
      );
    });
  });
});

describe('x-death from messages RabbitMQ really dead-lettered', () => {
  it('counts rejections and expiries per reason and source queue; retry-exhausted at maxRetries', async () => {
    await withVhost('xdeath', async (v, ch) => {
      await declareCorrectTopology(ch, 50);
      ch.sendToQueue('business_queue', Buffer.from('{"eventId":"pay-1"}'), {
        persistent: true,
        messageId: 'pay-1',
      });
      const consumer = await (await v.connect()).createChannel();
      let rejected = 0;
      const { consumerTag } = await consumer.consume('business_queue', (m) => {
        if (!m) return;
        rejected++;
        consumer.nack(m, false, false);
      });
      await until(async () => rejected >= 3, 15_000, 'three rejections');
      await consumer.cancel(consumerTag);
      await consumer.close();
      await until(async () => (await depth(ch, 'business_queue')) + (await depth(ch, 'retry_queue')) === 1);
      await until(
        async () => (await depth(ch, 'business_queue')) === 1,
        5000,
        'the message back in business_queue',
      );
      const exhausted = await inspect(v, { queues: ['business_queue'], maxRetries: 3 });
      const q = exhausted.report.queues.find((s) => s.name === 'business_queue');
      expect(q?.deadLettered).toEqual({
        count: 1,
        maxDeathCount: 3,
        byReason: { rejected: 3, expired: 3 },
        sourceQueues: ['business_queue', 'retry_queue'],
      });
      expect(codes(exhausted.findings)).toEqual([
        'no-consumers:business_queue',
        'retry-exhausted:business_queue',
      ]);
      const notYet = await inspect(v, { queues: ['business_queue'], maxRetries: 4 });
      expect(codes(notYet.findings)).toEqual(['no-consumers:business_queue']);
    });
  });
});

describe('peeking', () => {
  it('leaves every queue with the message count it had', async () => {
    await withVhost('peek', async (v, ch) => {
      await declareCorrectTopology(ch, 60_000);
      for (let i = 0; i < 5; i++)
        ch.sendToQueue('business_queue', Buffer.from(`m${i}`), { persistent: true });
      for (let i = 0; i < 3; i++) ch.sendToQueue('retry_queue', Buffer.from(`r${i}`), { persistent: true });
      for (let i = 0; i < 2; i++) ch.sendToQueue('parking_queue', Buffer.from(`p${i}`), { persistent: true });
      const names = ['business_queue', 'retry_queue', 'parking_queue'];
      // Every queue is its own process in the broker: each count is awaited, not only the last sent.
      await until(async () => (await Promise.all(names.map((n) => depth(ch, n)))).join() === '5,3,2');
      const before = await Promise.all(names.map((n) => depth(ch, n)));
      const { report } = await inspect(v, { peek: 3 });
      expect(report.queues.map((q) => q.ready)).toEqual([5, 2, 3]);
      const after = await Promise.all(names.map((n) => depth(ch, n)));
      expect(after).toEqual(before);
      // Order is kept: the first message is still the first one a consumer gets.
      const first = await ch.get('business_queue', { noAck: false });
      expect(first && first.content.toString()).toBe('m0');
      if (first) ch.nack(first, false, true);
    });
  });
});

describe('AMQP alone (no management API)', () => {
  it('counts by passive declare and says what is unknown', async () => {
    await withVhost('amqponly', async (v, ch) => {
      await declareArticleTopology(ch);
      ch.sendToQueue('business_queue', Buffer.from('x'));
      await until(async () => (await depth(ch, 'business_queue')) === 1);
      const { report, findings } = await inspect(v, {
        queues: ['business_queue', 'retry_queue'],
        api: false,
      });
      const q = report.queues[0];
      expect(q).toMatchObject({
        name: 'business_queue',
        ready: 1,
        consumers: 0,
        unacked: null,
        durable: null,
        arguments: null,
      });
      expect(report.notes?.[0]).toContain('no management API');
      expect(codes(findings)).toEqual(['no-consumers:business_queue']);
    });
  });
});
