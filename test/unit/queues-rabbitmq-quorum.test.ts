import type { GetMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { queueFindings } from '../../src/brokers/rabbitmq/findings.js';
import { messageJobId, republishOptions } from '../../src/brokers/rabbitmq/move.js';
import {
  isQuorum,
  quorumFindings,
  quorumSettings,
  summarizeDeliveries,
} from '../../src/brokers/rabbitmq/quorum.js';
import { topologyOf, type TopologyQueue } from '../../src/brokers/rabbitmq/topology.js';

function q(args: Record<string, unknown>, policy: Record<string, unknown> = {}): TopologyQueue {
  return {
    name: 'work',
    durable: true,
    exclusive: false,
    autoDelete: false,
    arguments: { 'x-queue-type': 'quorum', ...args },
    policy,
    ready: 0,
    unacked: 0,
    consumers: 1,
  };
}
const codes = (queue: TopologyQueue) => quorumFindings('b', queue).map((f) => f.code);
const DLX = { 'x-dead-letter-exchange': 'dlx', 'x-delivery-limit': 5 };

describe('quorum queue settings', () => {
  it('knows a quorum queue by its x-queue-type argument only', () => {
    expect(isQuorum(q({}))).toBe(true);
    expect(isQuorum({ arguments: {} })).toBe(false);
    expect(isQuorum({ arguments: { 'x-queue-type': 'classic' } })).toBe(false);
  });

  it('takes the lower delivery limit of argument and policy; the argument wins for strategy and overflow', () => {
    expect(quorumSettings(q({ 'x-delivery-limit': 5 }, { 'delivery-limit': 3 }))).toMatchObject({
      deliveryLimit: 3,
      fromPolicy: ['deliveryLimit'],
    });
    expect(quorumSettings(q({ 'x-delivery-limit': 2 }, { 'delivery-limit': 3 })).deliveryLimit).toBe(2);
    const s = quorumSettings(
      q(
        { 'x-overflow': 'reject-publish' },
        { overflow: 'drop-head', 'dead-letter-strategy': 'at-least-once' },
      ),
    );
    expect(s).toMatchObject({ overflow: 'reject-publish', deadLetterStrategy: 'at-least-once' });
    expect(s.fromPolicy).toEqual(['deadLetterStrategy']);
    expect(quorumSettings(q({}))).toMatchObject({
      deliveryLimit: undefined,
      deadLetterStrategy: 'at-most-once',
      overflow: 'drop-head',
    });
  });
});

describe('quorum queue findings', () => {
  it('no-delivery-limit on a quorum queue without a limit, never on a classic queue or with a policy limit', () => {
    expect(codes(q({}))).toEqual(['no-delivery-limit']);
    expect(codes(q({ 'x-delivery-limit': 0 }))).toEqual([]);
    expect(codes(q({}, { 'delivery-limit': 4 }))).toEqual([]);
    expect(codes({ ...q({}), arguments: {} })).toEqual([]);
  });

  it('dlx-at-most-once: at-least-once asked without reject-publish, and only with a dead-letter exchange', () => {
    expect(codes(q({ ...DLX, 'x-dead-letter-strategy': 'at-least-once' }))).toEqual(['dlx-at-most-once']);
    expect(
      codes(q({ ...DLX, 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' })),
    ).toEqual([]);
    expect(
      codes(q({ ...DLX, 'x-dead-letter-strategy': 'at-least-once' }, { overflow: 'reject-publish' })),
    ).toEqual([]);
    expect(codes(q({ ...DLX }))).toEqual([]);
    expect(codes(q({ 'x-delivery-limit': 5, 'x-dead-letter-strategy': 'at-least-once' }))).toEqual([]);
    expect(
      codes(q({ ...DLX, 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish-dlx' })),
    ).toEqual(['dlx-at-most-once']);
  });

  it('come with the topology findings of the queue, and name the delivery count a peek saw', () => {
    const topology = topologyOf([], [], []);
    const found = queueFindings('b', topology, q({}), [], { redelivered: 1, maxDeliveryCount: 7 });
    expect(found.map((f) => f.code)).toEqual(['no-delivery-limit']);
    expect(found[0]?.message).toContain('had come back 7 time(s)');
    expect(found[0]?.level).toBe('warn');
  });
});

describe('x-delivery-count', () => {
  it('is summed up over a peeked sample; a sample without it (a classic queue) gives null', () => {
    expect(summarizeDeliveries([{ 'x-delivery-count': 0 }, { 'x-delivery-count': 3 }, {}])).toEqual({
      redelivered: 1,
      maxDeliveryCount: 3,
    });
    expect(summarizeDeliveries([{}, undefined])).toBeNull();
    expect(summarizeDeliveries([])).toBeNull();
  });

  it('is neither part of a message id nor carried by a moved copy', () => {
    const message = (count: number) =>
      ({
        content: Buffer.from('x'),
        fields: { deliveryTag: 1, redelivered: count > 0, exchange: '', routingKey: 'q', messageCount: 0 },
        properties: { headers: { k: 1, 'x-delivery-count': count } },
      }) as unknown as GetMessage;
    expect(messageJobId(message(0))).toBe(messageJobId(message(4)));
    const options = republishOptions(
      message(4),
      {
        from: 'a',
        to: 'b',
        what: 'ready',
        batch: 1,
        dryRun: false,
        runId: 'r',
        onBatch: async () => undefined,
        shouldStop: () => false,
      },
      'guest',
    );
    expect(options.headers).toEqual({ k: 1, 'x-taskrecon-moved-run': 'r' });
  });
});
