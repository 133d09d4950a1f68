import type { GetMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { parseAmqpUrl } from '../../src/brokers/rabbitmq/connection.js';
import {
  matches,
  messageJobId,
  MOVED_RUN_HEADER,
  republishOptions,
} from '../../src/brokers/rabbitmq/move.js';
import type { MoveRequest } from '../../src/brokers/types.js';

function message(body: string, properties: Record<string, unknown> = {}): GetMessage {
  return {
    content: Buffer.from(body),
    fields: { deliveryTag: 1, redelivered: false, exchange: '', routingKey: 'q', messageCount: 0 },
    properties: {
      contentType: undefined,
      contentEncoding: undefined,
      headers: {},
      deliveryMode: undefined,
      priority: undefined,
      correlationId: undefined,
      replyTo: undefined,
      expiration: undefined,
      messageId: undefined,
      timestamp: undefined,
      type: undefined,
      userId: undefined,
      appId: undefined,
      clusterId: undefined,
      ...properties,
    } as GetMessage['properties'],
  };
}

const request = (over: Partial<MoveRequest> = {}): MoveRequest => ({
  from: 'parking',
  to: 'work',
  what: 'ready',
  batch: 10,
  dryRun: false,
  runId: 'run-1',
  onBatch: async () => undefined,
  shouldStop: () => false,
  ...over,
});

describe('AMQP URLs', () => {
  it('takes the vhost from the path (%2F and nothing are "/") and masks the password', () => {
    expect(parseAmqpUrl('amqp://u:secret@h:5673/%2F')).toMatchObject({
      vhost: '/',
      username: 'u',
      display: 'amqp://u:***@h:5673/%2F',
    });
    expect(parseAmqpUrl('amqp://h').vhost).toBe('/');
    expect(parseAmqpUrl('amqp://h/').vhost).toBe('/');
    expect(parseAmqpUrl('amqp://h/shop%2Feu').vhost).toBe('shop/eu');
    expect(parseAmqpUrl('amqps://h/x').connect.port).toBe(5671);
    expect(() => parseAmqpUrl('redis://h')).toThrow(/unsupported RabbitMQ URL scheme 'redis'/);
    expect(() => parseAmqpUrl('amqp://u:pw@[')).toThrow(/u:\*\*\*@/);
  });
});

describe('move filters and identity', () => {
  it('matches a header value (strings and byte headers) and a body text, both when both are given', () => {
    const m = message('{"eventId":"e1","biz":"sms"}', { headers: { 'x-biz': 'sms', raw: Buffer.from('b') } });
    expect(matches(m, undefined)).toBe(true);
    expect(matches(m, { header: { name: 'x-biz', value: 'sms' } })).toBe(true);
    expect(matches(m, { header: { name: 'raw', value: 'b' } })).toBe(true);
    expect(matches(m, { header: { name: 'x-biz', value: 'mail' } })).toBe(false);
    expect(matches(m, { header: { name: 'absent', value: '' } })).toBe(false);
    expect(matches(m, { body: '"biz":"sms"' })).toBe(true);
    expect(matches(m, { header: { name: 'x-biz', value: 'sms' }, body: 'nope' })).toBe(false);
  });

  it('is the message-id, else a fingerprint that ignores x-death and the move stamp', () => {
    expect(messageJobId(message('x', { messageId: 'evt-1' }))).toBe('evt-1');
    const a = messageJobId(message('x', { headers: { k: 1 } }));
    const b = messageJobId(
      message('x', { headers: { k: 1, 'x-death': [{ count: 2 }], [MOVED_RUN_HEADER]: 'r' } }),
    );
    expect(a).toMatch(/^sha256:[0-9a-f]{24}$/);
    expect(b).toBe(a);
    expect(messageJobId(message('y', { headers: { k: 1 } }))).not.toBe(a);
  });

  it('republishes with every property, the run stamped, x-death dropped only with resetDeath, a foreign user-id dropped', () => {
    const m = message('x', {
      contentType: 'application/json',
      deliveryMode: 2,
      priority: 5,
      messageId: 'evt-1',
      correlationId: 'c',
      expiration: '60000',
      userId: 'someone-else',
      headers: { keep: 'me', 'x-death': [{ count: 1 }], 'x-first-death-queue': 'work' },
    });
    const kept = republishOptions(m, request(), 'guest');
    expect(kept).toMatchObject({
      contentType: 'application/json',
      deliveryMode: 2,
      priority: 5,
      messageId: 'evt-1',
      correlationId: 'c',
      expiration: '60000',
      mandatory: true,
    });
    expect(kept.userId).toBeUndefined();
    expect(kept.headers).toMatchObject({
      keep: 'me',
      'x-first-death-queue': 'work',
      [MOVED_RUN_HEADER]: 'run-1',
    });
    expect(kept.headers['x-death']).toHaveLength(1);
    const reset = republishOptions(m, request({ resetDeath: true }), 'someone-else');
    expect(reset.headers['x-death']).toBeUndefined();
    expect(reset.headers['x-first-death-queue']).toBeUndefined();
    expect(reset.userId).toBe('someone-else');
  });
});
