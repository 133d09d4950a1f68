import { describe, expect, it } from 'vitest';
import {
  deathCount,
  exhaustedFinding,
  queueFindings,
  summarizeDeaths,
  TTL_LONG_MS,
} from '../../src/brokers/rabbitmq/findings.js';
import {
  deadLetterClosure,
  deadLetterSettings,
  headersMatch,
  ownRoutingKeys,
  parkingQueueOf,
  route,
  topicMatches,
  topologyOf,
  type TopologyBinding,
  type TopologyExchange,
  type TopologyQueue,
} from '../../src/brokers/rabbitmq/topology.js';

function q(
  name: string,
  args: Record<string, unknown> = {},
  over: Partial<TopologyQueue> = {},
): TopologyQueue {
  return {
    name,
    durable: true,
    exclusive: false,
    autoDelete: false,
    arguments: args,
    policy: {},
    ready: 0,
    unacked: 0,
    consumers: 1,
    ...over,
  };
}
function ex(name: string, type: string, over: Partial<TopologyExchange> = {}): TopologyExchange {
  return { name, type, durable: true, arguments: {}, policy: {}, ...over };
}
function bind(
  source: string,
  destination: string,
  routingKey: string,
  over: Partial<TopologyBinding> = {},
): TopologyBinding {
  return { source, destination, destinationType: 'queue', routingKey, arguments: {}, ...over };
}

describe('topic binding match', () => {
  it.each([
    ['order.*', 'order.created', true],
    ['order.*', 'order.created.eu', false],
    ['order.#', 'order', true],
    ['order.#', 'order.created.eu', true],
    ['#', '', true],
    ['#.eu', 'order.created.eu', true],
    ['*.created', 'created', false],
    ['order.created', 'order.created', true],
    ['order.created', 'order.paid', false],
  ])('%s against %s → %s', (pattern, key, expected) => {
    expect(topicMatches(pattern, key)).toBe(expected);
  });
});

describe('headers binding match', () => {
  it('x-match all needs every pair, any one of them; x- keys are ignored unless -with-x', () => {
    const args = { 'x-match': 'all', tenant: 'a', kind: 'sms' };
    expect(headersMatch(args, { tenant: 'a', kind: 'sms' })).toBe(true);
    expect(headersMatch(args, { tenant: 'a' })).toBe(false);
    expect(headersMatch({ ...args, 'x-match': 'any' }, { tenant: 'a' })).toBe(true);
    expect(headersMatch({ 'x-match': 'any', tenant: 'b' }, { tenant: 'a' })).toBe(false);
    expect(headersMatch({ 'x-match': 'all', 'x-k': '1' }, {})).toBe(true);
    expect(headersMatch({ 'x-match': 'all-with-x', 'x-k': '1' }, {})).toBe(false);
  });
});

describe('routing through bindings', () => {
  const topology = topologyOf(
    [q('a'), q('b'), q('c')],
    [
      ex('direct', 'direct'),
      ex('fan', 'fanout', { durable: false }),
      ex('topic', 'topic'),
      ex('alt-src', 'direct', { arguments: { 'alternate-exchange': 'fan' } }),
      ex('delayed', 'x-delayed-message', { arguments: { 'x-delayed-type': 'topic' } }),
    ],
    [
      bind('direct', 'a', 'k1'),
      bind('direct', 'fan', 'k2', { destinationType: 'exchange' }),
      bind('fan', 'b', 'whatever'),
      bind('topic', 'c', 'x.#'),
      bind('delayed', 'c', 'y.*'),
      bind('', 'a', 'a'),
    ],
  );
  it('direct by key; exchange-to-exchange; non-durable exchanges on the way are named', () => {
    expect(route(topology, 'direct', 'k1').queues).toEqual(['a']);
    const viaFan = route(topology, 'direct', 'k2');
    expect(viaFan.queues).toEqual(['b']);
    expect(viaFan.nonDurableExchanges).toEqual(['fan']);
    expect(route(topology, 'direct', 'k3').queues).toEqual([]);
  });
  it('the default exchange routes to the queue of that name; a missing exchange routes nowhere', () => {
    expect(route(topology, '', 'c').queues).toEqual(['c']);
    expect(route(topology, '', 'nope').queues).toEqual([]);
    expect(route(topology, 'gone', 'k').missingExchange).toBe('gone');
  });
  it('topic patterns, the alternate exchange when nothing matches, the delayed-message type', () => {
    expect(route(topology, 'topic', 'x.y.z').queues).toEqual(['c']);
    expect(route(topology, 'alt-src', 'unbound').queues).toEqual(['b']);
    expect(route(topology, 'delayed', 'y.1').queues).toEqual(['c']);
    expect(route(topology, 'delayed', 'y.1.2').queues).toEqual([]);
  });
});

describe('dead-letter settings', () => {
  it('arguments win over a policy; the lower TTL applies', () => {
    const s = deadLetterSettings({
      arguments: { 'x-message-ttl': 10_000, 'x-dead-letter-exchange': 'args-dlx' },
      policy: { 'message-ttl': 5000, 'dead-letter-exchange': 'policy-dlx' },
    });
    expect(s).toEqual({ exchange: 'args-dlx', routingKey: undefined, ttlMs: 5000, fromPolicy: ['ttl'] });
    const p = deadLetterSettings({
      arguments: {},
      policy: { 'dead-letter-exchange': '', 'dead-letter-routing-key': 'work' },
    });
    expect(p).toMatchObject({ exchange: '', routingKey: 'work', fromPolicy: ['exchange', 'routingKey'] });
  });
  it("the message's own key: sampled keys, else direct/topic binding keys without wildcards, else the name", () => {
    const t = topologyOf(
      [q('w'), q('solo')],
      [ex('e', 'direct'), ex('t', 'topic')],
      [bind('e', 'w', 'k'), bind('t', 'w', 'a.*'), bind('', 'w', 'w')],
    );
    expect(ownRoutingKeys(t, 'w')).toEqual(['k']);
    expect(ownRoutingKeys(t, 'w', ['s1', 's1'])).toEqual(['s1']);
    expect(ownRoutingKeys(t, 'solo')).toEqual(['solo']);
  });
});

describe('topology findings', () => {
  const article = topologyOf(
    [
      q('business_queue', {
        'x-dead-letter-exchange': 'retry_exchange',
        'x-dead-letter-routing-key': 'business_queue',
      }),
      q('retry_queue', { 'x-message-ttl': 10_000 }, { consumers: 0, ready: 4 }),
    ],
    [ex('retry_exchange', 'direct')],
    [bind('retry_exchange', 'retry_queue', 'business_queue')],
  );
  it('the article topology: ttl-without-dlx on the delay queue, which the business queue leads to', () => {
    expect(deadLetterClosure(article, ['business_queue'])).toEqual(['business_queue', 'retry_queue']);
    const codes = [...article.queues.values()].flatMap((queue) =>
      queueFindings('r', article, queue).map((f) => f.code),
    );
    // A delay queue without a DLX is not a delay queue, so its waiting messages count as unconsumed too.
    expect(codes).toEqual(['ttl-without-dlx', 'no-consumers']);
  });
  it('a delay queue with a DLX and no consumers is not no-consumers; TTL just over the limit is ttl-long', () => {
    const t = topologyOf(
      [
        q('work'),
        q(
          'delay',
          { 'x-message-ttl': TTL_LONG_MS, 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'work' },
          { consumers: 0, ready: 9 },
        ),
      ],
      [],
      [],
    );
    expect(queueFindings('r', t, t.queues.get('delay') as TopologyQueue)).toEqual([]);
    const long = {
      ...(t.queues.get('delay') as TopologyQueue),
      arguments: {
        'x-message-ttl': TTL_LONG_MS + 1,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'work',
      },
    };
    expect(queueFindings('r', t, long).map((f) => f.code)).toEqual(['ttl-long']);
  });
  it('parked-messages: a dead-letter target holding messages with no consumer; not when consumed, empty or a delay queue', () => {
    const parkingTopology = (parking: Partial<TopologyQueue>) =>
      topologyOf(
        [
          q('work', { 'x-dead-letter-exchange': 'dlx', 'x-dead-letter-routing-key': 'dead' }),
          q('parking', {}, parking),
          q('loose', {}, { consumers: 0, ready: 2 }),
        ],
        [ex('dlx', 'direct')],
        [bind('dlx', 'parking', 'dead')],
      );
    const parked = parkingTopology({ consumers: 0, ready: 3 });
    const found = queueFindings('r', parked, parked.queues.get('parking') as TopologyQueue);
    expect(found.map((f) => f.code)).toEqual(['parked-messages']);
    expect(found[0]).toMatchObject({ level: 'warn', count: 3, queue: 'parking' });
    expect(found[0]?.message).toContain("given up on by 'work'");
    expect(found[0]?.hint).toContain('queues move --broker r --from parking --to work --reset-death');
    // A queue nobody dead-letters into stays no-consumers.
    expect(
      queueFindings('r', parked, parked.queues.get('loose') as TopologyQueue).map((f) => f.code),
    ).toEqual(['no-consumers']);
    const consumed = parkingTopology({ consumers: 1, ready: 3 });
    expect(queueFindings('r', consumed, consumed.queues.get('parking') as TopologyQueue)).toEqual([]);
    const empty = parkingTopology({ consumers: 0, ready: 0 });
    expect(queueFindings('r', empty, empty.queues.get('parking') as TopologyQueue)).toEqual([]);
    // The business queue's delay queue is a dead-letter target too, but its messages leave by expiry.
    const delay = topologyOf(
      [
        q('work', { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'delay' }),
        q(
          'delay',
          { 'x-message-ttl': 5000, 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'work' },
          { consumers: 0, ready: 4 },
        ),
      ],
      [],
      [],
    );
    expect(queueFindings('r', delay, delay.queues.get('delay') as TopologyQueue)).toEqual([]);
    // What the delay queue dead-letters back is a retry: the business queue is not a parking queue.
    const back = {
      ...(delay.queues.get('work') as TopologyQueue),
      consumers: 0,
      ready: 2,
    };
    expect(queueFindings('r', delay, back).map((f) => f.code)).toEqual(['no-consumers']);
  });
  it('parked-messages through a policy: the policy dead-letters into the parking queue', () => {
    const t = topologyOf(
      [
        q('orders', {}, { policy: { 'dead-letter-exchange': '', 'dead-letter-routing-key': 'orders.dead' } }),
        q('orders.dead', {}, { consumers: 0, ready: 1 }),
      ],
      [],
      [],
    );
    expect(queueFindings('r', t, t.queues.get('orders.dead') as TopologyQueue).map((f) => f.code)).toEqual([
      'parked-messages',
    ]);
  });
  it('parked-messages by name: the parking queue of a retrying queue, not of a queue that does not retry', () => {
    const t = topologyOf(
      [
        q('orders', { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'orders.retry' }),
        q('orders.retry', {
          'x-message-ttl': 1000,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': 'orders',
        }),
        q('orders.dlq', {}, { consumers: 0, ready: 2 }),
        q('plain'),
        q('plain.dlq', {}, { consumers: 0, ready: 2 }),
      ],
      [],
      [],
    );
    expect(parkingQueueOf(t, 'orders')).toBe('orders.dlq');
    expect(parkingQueueOf(t, 'plain')).toBeUndefined();
    expect(queueFindings('r', t, t.queues.get('orders.dlq') as TopologyQueue).map((f) => f.code)).toEqual([
      'parked-messages',
    ]);
    expect(queueFindings('r', t, t.queues.get('plain.dlq') as TopologyQueue).map((f) => f.code)).toEqual([
      'no-consumers',
    ]);
  });
  it('an exclusive transient queue (an RPC reply queue) is not not-durable', () => {
    const t = topologyOf([], [], []);
    expect(queueFindings('r', t, q('amq.gen-1', {}, { durable: false, exclusive: true }))).toEqual([]);
    expect(queueFindings('r', t, q('tmp', {}, { durable: false })).map((f) => f.code)).toEqual([
      'not-durable',
    ]);
  });
});

describe('x-death figures', () => {
  const deaths = (...entries: Array<[string, string, number]>) => ({
    'x-death': entries.map(([queue, reason, count]) => ({ queue, reason, count })),
  });
  it('sums by reason, takes the highest count, names the source queues', () => {
    const sample = [
      deaths(['work', 'rejected', 3], ['delay', 'expired', 3]),
      deaths(['work', 'rejected', 1]),
      undefined,
      {},
    ];
    expect(summarizeDeaths(sample)).toEqual({
      count: 2,
      maxDeathCount: 3,
      byReason: { rejected: 4, expired: 3 },
      sourceQueues: ['delay', 'work'],
    });
    expect(summarizeDeaths([])).toBeNull();
    expect(deathCount(undefined)).toBe(0);
  });
  it('retry-exhausted at maxRetries, not one below, not without maxRetries', () => {
    const sample = [deaths(['work', 'rejected', 3])];
    expect(exhaustedFinding('r', 'work', sample, 3)?.count).toBe(1);
    expect(exhaustedFinding('r', 'work', sample, 4)).toBeUndefined();
    expect(exhaustedFinding('r', 'work', sample, undefined)).toBeUndefined();
  });
});
