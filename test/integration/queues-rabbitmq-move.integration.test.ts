import type { Channel, ConsumeMessage } from 'amqplib';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';
import { MOVED_RUN_HEADER } from '../../src/brokers/rabbitmq/move.js';
import type { MovedJob, MoveRequest } from '../../src/brokers/types.js';
import { depth, drainQueue, scratchVhost, until, type ScratchVhost } from '../support/rabbitmq.js';

let v: ScratchVhost;
let ch: Channel;
const dir = mkdtempSync(join(tmpdir(), 'taskrecon-rabbit-move-'));

beforeAll(async () => {
  v = await scratchVhost('move');
  ch = await v.channel();
});
afterAll(async () => {
  await v?.drop();
  rmSync(dir, { recursive: true, force: true });
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
    ).rejects.toThrow(/routed 3 message\(s\) to no queue/);
    expect(await depth(ch, 'parking')).toBe(3);
  });

  it('a move SIGKILLed midway loses nothing; duplicates only for confirmed copies, reported on the rerun', async () => {
    const n = 30;
    await park(n);
    const journal = join(dir, 'journal.jsonl');
    const script = fileURLToPath(new URL('../support/rabbit-move.ts', import.meta.url));
    // One process (node --import tsx), so SIGKILL kills the mover itself, not a wrapper.
    const node = [process.execPath, '--import', 'tsx'];
    const options = {
      url: v.amqpUrl,
      api: v.apiUrl,
      from: 'parking',
      to: 'work',
      journal,
      auditDelayMs: 300,
    };
    const child = spawn(
      node[0] as string,
      [...node.slice(1), script, JSON.stringify({ ...options, runId: 'run-1' })],
      {
        stdio: 'pipe',
      },
    );
    const lines = () => {
      try {
        return readFileSync(journal, 'utf8').split('\n').filter(Boolean).length;
      } catch {
        return 0;
      }
    };
    await until(async () => lines() >= 8, 30_000, 'the move to be under way');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('close', r));
    // The broker requeues what the dead process held unacked.
    await until(async () => (await depth(ch, 'parking')) + (await depth(ch, 'work')) >= n, 10_000, 'requeue');
    const audited = new Set(
      readFileSync(journal, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { jobId: string }).jobId),
    );
    const rerun = await new Promise<string>((resolve, reject) => {
      const again = spawn(
        node[0] as string,
        [...node.slice(1), script, JSON.stringify({ ...options, runId: 'run-2', auditDelayMs: 0 })],
        { stdio: 'pipe' },
      );
      let out = '';
      again.stdout.on('data', (d: Buffer) => (out += d.toString()));
      again.stderr.on('data', (d: Buffer) => (out += d.toString()));
      again.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(out))));
    });
    const result = JSON.parse(rerun) as { moved: number; alreadyMoved: number };
    expect(await depth(ch, 'parking')).toBe(0);
    const got = ids(await drain('work'));
    // Nothing lost: every message reached the target.
    expect(new Set(got)).toEqual(new Set(Array.from({ length: n }, (_, i) => `evt-${i}`)));
    const counts = new Map<string, number>();
    for (const id of got) counts.set(id, (counts.get(id) ?? 0) + 1);
    const duplicates = [...counts].filter(([, c]) => c > 1).map(([id]) => id);
    expect(got.length).toBe(n + duplicates.length);
    // The kill lands during a slow audit write: that message was confirmed and audited, not acked.
    expect(duplicates.length).toBeGreaterThan(0);
    // Each duplicate had its confirm (and audit row) before the kill, and the rerun reported it.
    for (const id of duplicates) expect(audited.has(id)).toBe(true);
    expect(result.alreadyMoved).toBe(duplicates.length);
    expect(result.moved).toBe(n - audited.size + duplicates.length);
  });
});
