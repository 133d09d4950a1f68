import type { Channel } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';
import type { QueueFinding } from '../../src/brokers/types.js';
import { runJson } from '../support/cli.js';
import { api, depth, scratchVhost, until, type ScratchVhost } from '../support/rabbitmq.js';
import { assertMatchesSchema } from '../support/schemas.js';

// Quorum queues on the machine's RabbitMQ: the two findings only they have fire on a planted case
// and stay quiet on a correct one, the classic findings neither misfire nor go missing, and the
// delivery counts RabbitMQ writes are read without spending a limited queue's deliveries.

async function withVhost<T>(label: string, fn: (v: ScratchVhost, ch: Channel) => Promise<T>): Promise<T> {
  const v = await scratchVhost(label);
  try {
    return await fn(v, await v.channel());
  } finally {
    await v.drop();
  }
}

async function inspect(v: ScratchVhost, options: { queues?: string[]; peek?: number; api?: boolean } = {}) {
  const broker = openRabbitBroker('rabbit', {
    kind: 'rabbitmq',
    url: v.amqpUrl,
    api: options.api === false ? undefined : v.apiUrl,
    queues: options.queues,
  });
  try {
    return await broker.inspect({ peek: options.peek ?? 0, nowEpoch: Math.floor(Date.now() / 1000) });
  } finally {
    await broker.close();
  }
}

async function doctor(v: ScratchVhost): Promise<string[]> {
  const broker = openRabbitBroker('rabbit', { kind: 'rabbitmq', url: v.amqpUrl, api: v.apiUrl });
  try {
    return (await broker.doctor()).map((c) => `${c.name}:${c.status}`);
  } finally {
    await broker.close();
  }
}

const codes = (findings: QueueFinding[]) => findings.map((f) => `${f.code}:${f.queue}`).sort();
const quorum = (args: Record<string, unknown> = {}) => ({
  durable: true,
  arguments: { 'x-queue-type': 'quorum', ...args },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A retry topology of quorum queues done right: delivery limits, TTL delay queue back, parking queue. */
async function declareCorrectQuorum(ch: Channel): Promise<void> {
  await ch.assertExchange('retry_exchange', 'direct', { durable: true });
  await ch.assertQueue(
    'business_queue',
    quorum({
      'x-delivery-limit': 5,
      'x-dead-letter-exchange': 'retry_exchange',
      'x-dead-letter-routing-key': 'business_queue',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    }),
  );
  await ch.assertQueue(
    'retry_queue',
    quorum({
      'x-delivery-limit': 5,
      'x-message-ttl': 60_000,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'business_queue',
    }),
  );
  await ch.bindQueue('retry_queue', 'retry_exchange', 'business_queue');
  await ch.assertQueue('parking_queue', quorum({ 'x-delivery-limit': 5 }));
}

describe('quorum queue findings', () => {
  it('a correct quorum retry topology has no finding: always durable, TTL and dead-lettering understood', async () => {
    await withVhost('q-correct', async (v, ch) => {
      await declareCorrectQuorum(ch);
      ch.sendToQueue('retry_queue', Buffer.from('{"eventId":"e1"}'), { persistent: true });
      await until(async () => (await depth(ch, 'retry_queue')) === 1);
      const { findings, report } = await inspect(v, { queues: ['business_queue'] });
      expect(findings).toEqual([]);
      expect(report.queues.map((q) => q.name)).toEqual(['business_queue', 'retry_queue', 'parking_queue']);
      expect(report.queues.every((q) => q.durable === true)).toBe(true);
      expect(await doctor(v)).toEqual([
        'amqp:ok',
        'management-api:ok',
        'durability:ok',
        'dead-letter: ttl-without-dlx:ok',
        'dead-letter: dlx-unroutable:ok',
        'dead-letter: ttl-long:ok',
        'dead-letter: dlx-at-most-once:ok',
        'quorum: no-delivery-limit:ok',
      ]);
    });
  });

  it('no-delivery-limit fires on a quorum queue without x-delivery-limit, not on a classic queue', async () => {
    await withVhost('q-nolimit', async (v, ch) => {
      await ch.assertQueue('poison', quorum());
      await ch.assertQueue('classic', { durable: true });
      await ch.assertQueue('limited', quorum({ 'x-delivery-limit': 3 }));
      const { findings } = await inspect(v);
      expect(codes(findings)).toEqual(['no-delivery-limit:poison']);
      expect(findings[0]?.level).toBe('warn');
      expect(findings[0]?.message).toContain('redelivered forever');
      expect(await doctor(v)).toContain('quorum: no-delivery-limit:warn');
    });
  });

  it('dlx-at-most-once fires on at-least-once dead-lettering without reject-publish, not with it', async () => {
    await withVhost('q-alo', async (v, ch) => {
      await ch.assertExchange('dlx', 'direct', { durable: true });
      await ch.assertQueue('dead', quorum({ 'x-delivery-limit': 3 }));
      await ch.bindQueue('dead', 'dlx', 'k');
      const alo = {
        'x-delivery-limit': 3,
        'x-dead-letter-exchange': 'dlx',
        'x-dead-letter-routing-key': 'k',
      };
      await ch.assertQueue('falls_back', quorum({ ...alo, 'x-dead-letter-strategy': 'at-least-once' }));
      await ch.assertQueue(
        'holds',
        quorum({ ...alo, 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' }),
      );
      await ch.assertQueue('at_most_once', quorum(alo));
      const { findings } = await inspect(v);
      expect(codes(findings)).toEqual(['dlx-at-most-once:falls_back']);
      expect(findings[0]?.message).toContain("overflow 'drop-head'");
      expect(await doctor(v)).toContain('dead-letter: dlx-at-most-once:warn');
    });
  });

  it('the broker behaves as the finding says: without reject-publish an unroutable dead letter is dropped, with it kept', async () => {
    await withVhost('q-alo-real', async (v, ch) => {
      const args = {
        'x-delivery-limit': 3,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'not_declared_yet',
        'x-dead-letter-strategy': 'at-least-once',
      };
      await ch.assertQueue('falls_back', quorum(args));
      await ch.assertQueue('holds', quorum({ ...args, 'x-overflow': 'reject-publish' }));
      for (const q of ['falls_back', 'holds']) {
        ch.sendToQueue(q, Buffer.from(q), { persistent: true });
        await until(async () => (await depth(ch, q)) === 1);
        const m = await ch.get(q, { noAck: false });
        if (m) ch.nack(m, false, false);
      }
      const stats = async () =>
        ((await api('GET', `/queues/${encodeURIComponent(v.vhost)}`)).json as Array<Record<string, unknown>>)
          .filter((q) => typeof q.messages_dlx === 'number')
          .map((q) => `${String(q.name)}:${String(q.messages_dlx)}`)
          .sort();
      await until(async () => (await stats()).length === 2, 20_000, 'the queue stats');
      await until(async () => (await stats()).includes('holds:1'), 20_000, 'the held dead letter');
      expect(await stats()).toEqual(['falls_back:0', 'holds:1']);
      expect(codes((await inspect(v)).findings)).toContain('dlx-at-most-once:falls_back');
      expect(codes((await inspect(v)).findings)).not.toContain('dlx-at-most-once:holds');
    });
  });

  it('policies count: a policy delivery-limit and overflow clear the findings; the lower limit applies', async () => {
    await withVhost('q-policy', async (v, ch) => {
      await ch.assertExchange('dlx', 'fanout', { durable: true });
      await ch.assertQueue('dead', quorum({ 'x-delivery-limit': 3 }));
      await ch.bindQueue('dead', 'dlx', '');
      await ch.assertQueue('pol_work', quorum({ 'x-dead-letter-exchange': 'dlx' }));
      await api('PUT', `/policies/${encodeURIComponent(v.vhost)}/alo`, {
        pattern: '^pol_',
        definition: { 'dead-letter-strategy': 'at-least-once' },
        'apply-to': 'queues',
      });
      await until(
        async () => codes((await inspect(v)).findings).includes('dlx-at-most-once:pol_work'),
        15_000,
        'the strategy policy to apply',
      );
      const flagged = await inspect(v);
      expect(codes(flagged.findings)).toEqual(['dlx-at-most-once:pol_work', 'no-delivery-limit:pol_work']);
      expect(flagged.findings.find((f) => f.code === 'dlx-at-most-once')?.message).toContain('from a policy');
      await api('PUT', `/policies/${encodeURIComponent(v.vhost)}/alo`, {
        pattern: '^pol_',
        definition: {
          'dead-letter-strategy': 'at-least-once',
          overflow: 'reject-publish',
          'delivery-limit': 4,
        },
        'apply-to': 'queues',
      });
      await until(async () => (await inspect(v)).findings.length === 0, 15_000, 'the full policy to apply');
    });
  });

  it('a quorum queue takes x-message-ttl: ttl-without-dlx still fires, and its messages really expire', async () => {
    await withVhost('q-ttl', async (v, ch) => {
      await ch.assertQueue('delay', quorum({ 'x-delivery-limit': 3, 'x-message-ttl': 200 }));
      const { findings } = await inspect(v);
      expect(codes(findings)).toEqual(['ttl-without-dlx:delay']);
      expect(findings[0]?.level).toBe('crit');
      ch.sendToQueue('delay', Buffer.from('gone'), { persistent: true });
      await sleep(1000);
      expect(await depth(ch, 'delay')).toBe(0);
    });
  });
});

describe('x-delivery-count from peeked messages', () => {
  async function returnTwice(ch: Channel, queue: string): Promise<void> {
    ch.sendToQueue(queue, Buffer.from('{"eventId":"p1"}'), { persistent: true, messageId: 'p1' });
    await until(async () => (await depth(ch, queue)) === 1);
    for (let i = 0; i < 2; i++) {
      const m = await ch.get(queue, { noAck: false });
      if (m) ch.nack(m, false, true);
      await until(async () => (await depth(ch, queue)) === 1);
    }
  }

  it('shows the highest count and names it in no-delivery-limit; a classic queue has none', async () => {
    await withVhost('q-count', async (v, ch) => {
      await ch.assertQueue('poison', quorum());
      await ch.assertQueue('classic', { durable: true });
      await returnTwice(ch, 'poison');
      await returnTwice(ch, 'classic');
      const { report, findings } = await inspect(v, { peek: 5 });
      const poison = report.queues.find((q) => q.name === 'poison');
      expect(poison?.deliveries).toEqual({ redelivered: 1, maxDeliveryCount: 2 });
      expect(report.queues.find((q) => q.name === 'classic')?.deliveries).toBeNull();
      expect(findings.find((f) => f.code === 'no-delivery-limit')?.message).toContain(
        'had come back 2 time(s)',
      );
      // Through the CLI: the new code and field answer the queues --json schema; a warn is exit 1.
      const run = await runJson<{ findings: QueueFinding[] }>([
        'queues',
        '--rabbitmq',
        v.amqpUrl,
        '--api',
        v.apiUrl,
        '--peek',
        '5',
      ]);
      expect(run.code, run.stderr).toBe(1);
      assertMatchesSchema('queues', run.json);
      expect(codes(run.json.findings)).toContain('no-delivery-limit:poison');
      // Without a peek there is nothing to read.
      expect((await inspect(v)).report.queues.find((q) => q.name === 'poison')?.deliveries).toBeNull();
    });
  });

  it('a quorum queue with a delivery limit is not peeked: its messages keep every delivery', async () => {
    await withVhost('q-limit', async (v, ch) => {
      await ch.assertQueue('limited', quorum({ 'x-delivery-limit': 2 }));
      await returnTwice(ch, 'limited');
      // One more return would exceed the limit and drop the message: the peek must not make it.
      const { report } = await inspect(v, { peek: 5 });
      expect(report.notes?.join(' ')).toContain("quorum queue 'limited' was not peeked");
      expect(report.queues[0]?.deliveries).toBeNull();
      const m = await ch.get('limited', { noAck: false });
      expect(m && m.properties.headers?.['x-delivery-count']).toBe(2);
      if (m) ch.ack(m);
    });
  });

  it('without the management API the peek stops at the first message of a quorum queue', async () => {
    await withVhost('q-noapi', async (v, ch) => {
      await ch.assertQueue('unknown_type', quorum());
      for (let i = 0; i < 3; i++) ch.sendToQueue('unknown_type', Buffer.from(`m${i}`), { persistent: true });
      await until(async () => (await depth(ch, 'unknown_type')) === 3);
      const { report } = await inspect(v, { api: false, queues: ['unknown_type'], peek: 3 });
      expect(report.notes?.join(' ')).toContain("'unknown_type' is a quorum queue: the peek stopped");
      expect(report.queues[0]?.deliveries).toEqual({ redelivered: 0, maxDeliveryCount: 0 });
      expect(report.queues[0]?.ready).toBe(3);
    });
  });
});
