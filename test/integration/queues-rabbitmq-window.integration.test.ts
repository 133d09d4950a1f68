import type { Channel, ConsumeMessage } from 'amqplib';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';
import type { MovedJob, MoveRequest } from '../../src/brokers/types.js';
import { depth, drainQueue, scratchVhost, until, type ScratchVhost } from '../support/rabbitmq.js';

/**
 * The RabbitMQ mover at broker speed: a consumer with a prefetch window, confirms, acks after the
 * confirm, the intent before the publish and the settle after the ack; on a classic and a quorum
 * queue alike.
 */

let v: ScratchVhost;
let ch: Channel;
const dir = mkdtempSync(join(tmpdir(), 'taskrecon-rabbit-window-'));

beforeAll(async () => {
  v = await scratchVhost('window');
  ch = await v.channel();
});
afterAll(async () => {
  await v?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const ids = (messages: ConsumeMessage[]) => messages.map((m) => String(m.properties.messageId));
const evts = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `evt-${from + i}`);

describe.each(['classic', 'quorum'] as const)('queues move on a %s queue', (type) => {
  beforeEach(async () => {
    for (const q of ['parking', 'work']) await ch.deleteQueue(q).catch(() => undefined);
    ch = await v.channel();
    await ch.assertQueue('parking', { durable: true, arguments: { 'x-queue-type': type } });
    await ch.assertQueue('work', { durable: true, arguments: { 'x-queue-type': type } });
  });

  async function fill(n: number): Promise<void> {
    const pub = await (await v.connect()).createConfirmChannel();
    for (let i = 0; i < n; i++)
      pub.sendToQueue('parking', Buffer.from(JSON.stringify({ eventId: `evt-${i}`, pad: 'p'.repeat(64) })), {
        persistent: true,
        messageId: `evt-${i}`,
        contentType: 'application/json',
        correlationId: `corr-${i}`,
        headers: { 'x-tenant': 'acme', 'x-seq': i },
      });
    await pub.waitForConfirms();
    await pub.close();
  }

  function request(over: Partial<MoveRequest> & { log?: string[] }): MoveRequest {
    const log = over.log ?? [];
    return {
      from: 'parking',
      to: 'work',
      what: 'ready',
      batch: 50,
      dryRun: false,
      runId: `run-${type}`,
      onBatch: async () => void log.push('onBatch'),
      intents: {
        open: async (jobs: readonly MovedJob[]) => log.push(`intent:${jobs.length}`),
        settle: async (_handle: number, moved: readonly MovedJob[]) =>
          void log.push(`settle:${moved.length}`),
      },
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

  it('consumes with a window (a consumer on the source while it moves), keeps properties, intent before each settle', async () => {
    await fill(400);
    const log: string[] = [];
    let consumers = 0;
    const moving = move(request({ log, ratePerSecond: 800 }));
    await until(async () => {
      consumers = Math.max(consumers, (await ch.checkQueue('parking')).consumerCount);
      return consumers > 0 || (await depth(ch, 'parking')) === 0;
    });
    const result = await moving;
    expect(consumers).toBe(1);
    expect(result).toMatchObject({ matched: 400, moved: 400, dryRun: false });
    const got = await drainQueue(v, ch, 'work');
    expect(ids(got).sort()).toEqual(evts(0, 400).sort());
    const m = got.find((x) => x.properties.messageId === 'evt-7') as ConsumeMessage;
    expect(m.properties).toMatchObject({
      contentType: 'application/json',
      correlationId: 'corr-7',
      deliveryMode: 2,
    });
    expect(m.properties.headers).toMatchObject({ 'x-tenant': 'acme', 'x-seq': 7 });
    // Every batch's intent came before its settle; all 400 were announced and settled.
    const sum = (kind: string) =>
      log.filter((l) => l.startsWith(kind)).reduce((n, l) => n + Number(l.split(':')[1]), 0);
    expect(sum('intent')).toBe(400);
    expect(sum('settle')).toBe(400);
    let open = 0;
    for (const l of log) {
      open += l.startsWith('intent') ? 1 : -1;
      expect(open).toBeGreaterThanOrEqual(0);
    }
  });

  it('--limit N with a window wider than N moves exactly N; the rest stay at the source in their order', async () => {
    await fill(130);
    const result = await move(request({ limit: 37, batch: 50 }));
    expect(result).toMatchObject({ matched: 37, moved: 37 });
    expect(ids(await drainQueue(v, ch, 'work')).sort()).toEqual(evts(0, 37).sort());
    const rest = ids(await drainQueue(v, ch, 'parking'));
    // A classic queue takes back what the window held beyond N in place; a quorum queue at its end.
    if (type === 'classic') expect(rest).toEqual(evts(37, 130));
    else expect(rest.sort()).toEqual(evts(37, 130).sort());
  });

  it('a target that routes copies back into the source: each message moved once, the copies left alone', async () => {
    await fill(300);
    await ch.assertExchange('loop', 'fanout', { durable: true });
    await ch.bindQueue('parking', 'loop', '');
    await ch.bindQueue('work', 'loop', '');
    const result = await move(request({ to: undefined, toExchange: 'loop', batch: 40 }));
    expect(result).toMatchObject({ matched: 300, moved: 300 });
    const back = await drainQueue(v, ch, 'parking');
    expect(ids(back).sort()).toEqual(evts(0, 300).sort());
    expect(back.every((m) => m.properties.headers?.['x-taskrecon-moved-run'] === `run-${type}`)).toBe(true);
    expect(ids(await drainQueue(v, ch, 'work')).sort()).toEqual(evts(0, 300).sort());
    await ch.deleteExchange('loop');
  });

  it('a dry run counts and touches no message: nothing written, nothing redelivered', async () => {
    await fill(20);
    const log: string[] = [];
    const result = await move(request({ dryRun: true, log, limit: 15 }));
    expect(result).toMatchObject({ dryRun: true, matched: 15, moved: 0 });
    expect(log).toEqual([]);
    expect(await depth(ch, 'work')).toBe(0);
    const left = await drainQueue(v, ch, 'parking');
    expect(ids(left)).toEqual(evts(0, 20));
    expect(left.every((m) => !m.fields.redelivered)).toBe(true);
  });

  it('SIGKILLed mid-run: nothing lost, every copy at the target was announced by an intent first, duplicates only from open intents', async () => {
    const n = 3000;
    await fill(n);
    const journal = join(dir, `journal-${type}.jsonl`);
    const script = fileURLToPath(new URL('../support/rabbit-move.ts', import.meta.url));
    const options = { url: v.amqpUrl, api: v.apiUrl, from: 'parking', to: 'work', journal, batch: 100 };
    const node = [process.execPath, '--import', 'tsx', script];
    const entries = () => {
      try {
        return readFileSync(journal, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { kind: 'intent' | 'settled'; runId: string; ids: string[] });
      } catch {
        return [];
      }
    };
    const child = spawn(
      node[0] as string,
      [...node.slice(1), JSON.stringify({ ...options, runId: 'run-1', settleDelayMs: 40 })],
      { stdio: 'ignore' },
    );
    await until(async () => entries().filter((e) => e.kind === 'settled').length >= 4, 30_000, 'the move');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('close', r));
    await until(async () => (await depth(ch, 'parking')) + (await depth(ch, 'work')) >= n, 10_000, 'requeue');
    const copies = ids(await drainQueue(v, ch, 'work'));
    const announced = new Set(entries().flatMap((e) => (e.kind === 'intent' ? e.ids : [])));
    const settled = new Set(entries().flatMap((e) => (e.kind === 'settled' ? e.ids : [])));
    // Every copy that reached the target was announced before it was published.
    for (const id of copies) expect(announced.has(id)).toBe(true);
    // A settled message is at the target and no longer at the source.
    for (const id of settled) expect(copies).toContain(id);
    const rest = ids(await drainQueue(v, ch, 'parking'));
    for (const id of settled) expect(rest).not.toContain(id);
    // Nothing lost: every message is at the source or the target; a message in both was in an open intent.
    expect(new Set([...copies, ...rest])).toEqual(new Set(evts(0, n)));
    const both = copies.filter((id) => rest.includes(id));
    for (const id of both) expect(announced.has(id) && !settled.has(id)).toBe(true);
    expect(copies.length).toBeGreaterThan(0);
  });
});
