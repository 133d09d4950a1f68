import type { Channel, ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AckLedger } from '../../src/brokers/rabbitmq/move-acks.js';
import { depth, drainQueue, scratchVhost, until, type ScratchVhost } from '../support/rabbitmq.js';

/**
 * The acks of a move, sent in as few frames as is safe: one basic.ack with `multiple` for a batch
 * when nothing still open lies below it, else one per message. What the broker holds after the
 * channel closes (unacked messages go back to the queue) shows what each frame settled.
 */

let v: ScratchVhost;
let ch: Channel;

beforeAll(async () => {
  v = await scratchVhost('acks');
  ch = await v.channel();
});
afterAll(async () => {
  await v?.drop();
});

/** A channel whose acks and nacks are recorded as they go to the broker. */
interface Recorded {
  channel: Channel;
  frames: string[];
  messages: ConsumeMessage[];
}

async function consumeAll(n: number): Promise<Recorded> {
  const channel = await (await v.connect()).createChannel();
  const frames: string[] = [];
  const ack = channel.ack.bind(channel);
  const nack = channel.nack.bind(channel);
  channel.ack = (m, multiple) => {
    frames.push(`ack ${m.fields.deliveryTag}${multiple ? ' multiple' : ''}`);
    ack(m, multiple);
  };
  channel.nack = (m, multiple, requeue) => {
    frames.push(`nack ${m.fields.deliveryTag}${requeue ? ' requeue' : ''}`);
    nack(m, multiple, requeue);
  };
  await channel.prefetch(n);
  const messages: ConsumeMessage[] = [];
  await channel.consume('q', (m) => void (m && messages.push(m)), { noAck: false });
  await until(async () => messages.length === n, 5000, `${n} deliveries`);
  return { channel, frames, messages };
}

/** The ids left in the queue once `channel` closed (its unacked messages requeued), in order. */
async function leftAfterClose(channel: Channel): Promise<string[]> {
  await channel.close();
  return (await drainQueue(v, ch, 'q')).map((m) => String(m.properties.messageId)).sort();
}

const slice = (r: Recorded, from: number, to: number) => r.messages.slice(from - 1, to);

describe('AckLedger', () => {
  beforeEach(async () => {
    await ch.deleteQueue('q').catch(() => undefined);
    ch = await v.channel();
    await ch.assertQueue('q', { durable: true });
    for (let i = 1; i <= 10; i++)
      ch.sendToQueue('q', Buffer.from(`m${i}`), { messageId: `m${String(i).padStart(2, '0')}` });
    await until(async () => (await depth(ch, 'q')) === 10, 5000, 'ten messages');
  });

  it('acks batches that follow one another with one frame each, and the broker keeps none of them', async () => {
    const r = await consumeAll(10);
    const ledger = new AckLedger(r.channel);
    ledger.ack(slice(r, 1, 5));
    ledger.ack(slice(r, 6, 10));
    expect(r.frames).toEqual(['ack 5 multiple', 'ack 10 multiple']);
    expect(await leftAfterClose(r.channel)).toEqual([]);
  });

  it('acks a batch one by one while an earlier one is still open, and the earlier one stays unacked', async () => {
    const r = await consumeAll(10);
    const ledger = new AckLedger(r.channel);
    ledger.ack(slice(r, 6, 10));
    expect(r.frames).toEqual(['ack 6', 'ack 7', 'ack 8', 'ack 9', 'ack 10']);
    // The earlier batch, acked last, covers everything below it again: one frame.
    ledger.ack(slice(r, 1, 3));
    expect(r.frames.slice(5)).toEqual(['ack 3 multiple']);
    expect(await leftAfterClose(r.channel)).toEqual(['m04', 'm05']);
  });

  it('never acks past a message held back between batches, until it is settled', async () => {
    const r = await consumeAll(10);
    const ledger = new AckLedger(r.channel);
    ledger.ack(slice(r, 1, 3));
    ledger.ack(slice(r, 5, 7));
    expect(r.frames).toEqual(['ack 3 multiple', 'ack 5', 'ack 6', 'ack 7']);
    ledger.nack(slice(r, 4, 4), true);
    ledger.ack(slice(r, 8, 9));
    expect(r.frames.slice(4)).toEqual(['nack 4 requeue', 'ack 9 multiple']);
    // m04 went back to the queue once; m10 was never acked.
    expect(await leftAfterClose(r.channel)).toEqual(['m04', 'm10']);
  });

  it('settles what did not land first, so the rest of its batch still goes in one frame', async () => {
    const r = await consumeAll(10);
    const ledger = new AckLedger(r.channel);
    const batch = slice(r, 1, 10);
    ledger.nack(
      batch.filter((m) => m.fields.deliveryTag === 3),
      true,
    );
    ledger.ack(batch.filter((m) => m.fields.deliveryTag !== 3));
    expect(r.frames).toEqual(['nack 3 requeue', 'ack 10 multiple']);
    expect(await leftAfterClose(r.channel)).toEqual(['m03']);
  });
});
