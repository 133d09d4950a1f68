import type { Channel, ConsumeMessage } from 'amqplib';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';
import type { MovedJob, MoveRequest } from '../../src/brokers/types.js';
import { runJson } from '../support/cli.js';
import { api, depth, drainQueue, scratchVhost, until, type ScratchVhost } from '../support/rabbitmq.js';

// `queues move` and the dead-letter drill on quorum queues: exact counts of 2,000 persistent
// messages quorum→quorum, classic→quorum and quorum→classic, `--limit` exact, headers and
// properties kept but never the source queue's delivery count; the drill passes on a quorum
// retry topology and leaves nothing behind.

let v: ScratchVhost;
let ch: Channel;
let cwd: string;
const N = 2000;

beforeAll(async () => {
  v = await scratchVhost('quorum-move');
  ch = await v.channel();
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-quorum-'));
});
afterAll(async () => {
  await v?.drop();
  rmSync(cwd, { recursive: true, force: true });
});

const ids = (messages: ConsumeMessage[]) => messages.map((m) => String(m.properties.messageId));
const evts = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `evt-${from + i}`);
const args = (type: string) =>
  type === 'quorum' ? { 'x-queue-type': 'quorum', 'x-delivery-limit': 10 } : {};

async function move(over: Partial<MoveRequest>) {
  const broker = openRabbitBroker('rabbit', { kind: 'rabbitmq', url: v.amqpUrl, api: v.apiUrl });
  const announced: string[] = [];
  const settled: string[] = [];
  try {
    const result = await broker.move({
      from: 'src',
      to: 'dst',
      what: 'ready',
      batch: 250,
      dryRun: false,
      runId: 'run-quorum',
      onBatch: async () => undefined,
      intents: {
        open: async (jobs: readonly MovedJob[]) => announced.push(...jobs.map((j) => j.jobId)),
        settle: async (_h: number, moved: readonly MovedJob[]) =>
          void settled.push(...moved.map((j) => j.jobId)),
      },
      shouldStop: () => false,
      ...over,
    });
    return { result, announced, settled };
  } finally {
    await broker.close();
  }
}

describe.each([
  ['quorum', 'quorum'],
  ['classic', 'quorum'],
  ['quorum', 'classic'],
] as const)('queues move %s → %s', (from, to) => {
  beforeEach(async () => {
    for (const q of ['src', 'dst']) await ch.deleteQueue(q).catch(() => undefined);
    ch = await v.channel();
    await ch.assertQueue('src', { durable: true, arguments: args(from) });
    await ch.assertQueue('dst', { durable: true, arguments: args(to) });
    const pub = await (await v.connect()).createConfirmChannel();
    for (let i = 0; i < N; i++)
      pub.sendToQueue('src', Buffer.from(JSON.stringify({ eventId: `evt-${i}` })), {
        persistent: true,
        messageId: `evt-${i}`,
        contentType: 'application/json',
        correlationId: `corr-${i}`,
        headers: { 'x-tenant': 'acme', 'x-seq': i },
      });
    await pub.waitForConfirms();
    await pub.close();
    // The message at the head comes back once: on a quorum source it carries x-delivery-count 1.
    const head = await ch.get('src', { noAck: false });
    if (head) ch.nack(head, false, true);
    await until(async () => (await depth(ch, 'src')) === N);
  });

  it(`moves all ${N} exactly once, headers and properties kept, no delivery count carried over`, async () => {
    const { result, announced, settled } = await move({});
    expect(result).toMatchObject({ matched: N, moved: N, dryRun: false });
    expect(new Set(announced).size).toBe(N);
    expect(new Set(settled).size).toBe(N);
    expect(await depth(ch, 'src')).toBe(0);
    const got = await drainQueue(v, ch, 'dst');
    expect(ids(got).sort()).toEqual(evts(0, N).sort());
    const m = got.find((x) => x.properties.messageId === 'evt-0') as ConsumeMessage;
    expect(m.properties).toMatchObject({
      contentType: 'application/json',
      correlationId: 'corr-0',
      deliveryMode: 2,
    });
    expect(m.properties.headers).toMatchObject({
      'x-tenant': 'acme',
      'x-seq': 0,
      'x-taskrecon-moved-run': 'run-quorum',
    });
    // evt-0 came back once at a quorum source; its copy starts afresh: a quorum target counts its
    // own deliveries (a first one by a consumer carries no count), a classic target none at all.
    const counts = new Set(got.map((x) => x.properties.headers?.['x-delivery-count']));
    expect([...counts]).toEqual([undefined]);
  });

  it('--limit 777 moves exactly 777; the other 1,223 stay at the source, none lost or doubled', async () => {
    const { result } = await move({ limit: 777 });
    expect(result).toMatchObject({ matched: 777, moved: 777 });
    const moved = ids(await drainQueue(v, ch, 'dst'));
    const rest = await drainQueue(v, ch, 'src');
    expect(moved.length).toBe(777);
    expect(rest.length).toBe(N - 777);
    expect(new Set([...moved, ...ids(rest)])).toEqual(new Set(evts(0, N)));
    if (from === 'quorum') {
      // What the window held beyond the limit went back once: one delivery each, never more.
      const count = (m: ConsumeMessage) => Number(m.properties.headers?.['x-delivery-count'] ?? 0);
      expect(rest.filter((m) => count(m) > 0).length).toBeLessThanOrEqual(2 * 250 + 1);
      expect(Math.max(...rest.map(count))).toBeLessThanOrEqual(1);
    }
  });
});

describe('the dead-letter drill on quorum queues', () => {
  async function declare(vhost: ScratchVhost, strategy: Record<string, unknown>): Promise<void> {
    const c = await vhost.channel();
    await c.assertExchange('retry_exchange', 'direct', { durable: true });
    const q = (extra: Record<string, unknown>) => ({
      durable: true,
      arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 10, ...extra },
    });
    await c.assertQueue(
      'business_queue',
      q({
        'x-dead-letter-exchange': 'retry_exchange',
        'x-dead-letter-routing-key': 'business_queue',
        ...strategy,
      }),
    );
    await c.assertQueue(
      'retry_queue',
      q({
        'x-message-ttl': 10_000,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'business_queue',
      }),
    );
    await c.bindQueue('retry_queue', 'retry_exchange', 'business_queue');
    await c.assertQueue('parking_queue', q({}));
  }

  it('passes on a quorum retry topology (at-least-once with reject-publish) and removes its scratch queues', async () => {
    const drillVhost = await scratchVhost('quorum-drill');
    try {
      await declare(drillVhost, {
        'x-dead-letter-strategy': 'at-least-once',
        'x-overflow': 'reject-publish',
      });
      writeFileSync(
        join(cwd, 'taskrecon.config.yaml'),
        `brokers:\n  q: { kind: rabbitmq, url: "${drillVhost.amqpUrl}", api: "${drillVhost.apiUrl}", maxRetries: 3 }\n`,
      );
      const run = await runJson<{
        passed: number;
        failed: number;
        scenarios: Array<{ steps: Array<{ name: string; status: string; detail: string }> }>;
      }>(['drill', '--scenario', 'dead-letter-topology', '--broker', 'q', '--queue', 'business_queue'], {
        cwd,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.json).toMatchObject({ passed: 1, failed: 0 });
      const steps = run.json.scenarios[0]?.steps ?? [];
      expect(steps.map((s) => s.name)).toContain('rejection 3 of 3: it comes back with x-death count 3');
      expect(steps.at(-1)?.detail).toMatch(/parked in 'parking_queue' with .*rejected×3 \(business_queue\)/);
      // The scratch copies were quorum queues too, and none is left.
      const left = (await api('GET', `/queues/${encodeURIComponent(drillVhost.vhost)}`)).json as Array<{
        name: string;
      }>;
      expect(left.map((q) => q.name).filter((n) => n.startsWith('taskrecon-drill-'))).toEqual([]);
    } finally {
      await drillVhost.drop();
    }
  });
});

describe('a message past its delivery limit', () => {
  it('is dead-lettered with reason delivery_limit, reported as such and moved back with --reset-death', async () => {
    for (const q of ['work_q', 'work_q.parking']) await ch.deleteQueue(q).catch(() => undefined);
    // No delivery limit on the parking queue: a limited one would not be peeked.
    await ch.assertQueue('work_q.parking', { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await ch.assertQueue('work_q', {
      durable: true,
      arguments: {
        'x-queue-type': 'quorum',
        'x-delivery-limit': 1,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'work_q.parking',
      },
    });
    ch.sendToQueue('work_q', Buffer.from('{"eventId":"poison"}'), { persistent: true, messageId: 'poison' });
    await until(async () => (await depth(ch, 'work_q')) === 1);
    // Returned twice by a consumer that cannot handle it: the second return passes the limit.
    for (let i = 0; i < 2; i++) {
      await until(async () => (await depth(ch, 'work_q')) === 1);
      const m = await ch.get('work_q', { noAck: false });
      if (m) ch.nack(m, false, true);
    }
    await until(async () => (await depth(ch, 'work_q.parking')) === 1, 10_000, 'the dead letter');
    const broker = openRabbitBroker('rabbit', {
      kind: 'rabbitmq',
      url: v.amqpUrl,
      api: v.apiUrl,
      queues: ['work_q'],
    });
    try {
      const { report, findings } = await broker.inspect({ peek: 5, nowEpoch: Math.floor(Date.now() / 1000) });
      const parking = report.queues.find((q) => q.name === 'work_q.parking');
      expect(parking?.deadLettered).toMatchObject({
        count: 1,
        byReason: { delivery_limit: 1 },
        sourceQueues: ['work_q'],
      });
      expect(findings.map((f) => `${f.code}:${f.queue}`).sort()).toEqual([
        'no-delivery-limit:work_q.parking',
        'parked-messages:work_q.parking',
      ]);
    } finally {
      await broker.close();
    }
    const { result } = await move({
      from: 'work_q.parking',
      to: 'work_q',
      resetDeath: true,
      runId: 'run-back',
    });
    expect(result).toMatchObject({ matched: 1, moved: 1 });
    const back = await ch.get('work_q', { noAck: false });
    expect(back && back.properties.messageId).toBe('poison');
    expect(back && back.properties.headers?.['x-death']).toBeUndefined();
    expect(back && back.properties.headers?.['x-delivery-count']).toBe(0);
    if (back) ch.ack(back);
  });
});
