import type { ChannelModel, GetMessage } from 'amqplib';
import type { Redis } from 'ioredis';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AmqpTarget } from '../../src/brokers/rabbitmq/connection.js';
import { moveRabbit } from '../../src/brokers/rabbitmq/move.js';
import { moveJobs } from '../../src/brokers/redis/move.js';
import type { MoveRequest } from '../../src/brokers/types.js';
import { ManualClock } from '../../src/core/clock.js';
import { Pacer } from '../../src/core/pacer.js';
import { bindSource } from '../../src/db/bind-source.js';
import { asyncTaskDdl } from '../../src/db/ddl.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { openSqlite } from '../../src/db/engines/sqlite/db.js';
import { compensate } from '../../src/verbs/compensate/index.js';

/** A ManualClock whose sleeps pass at once: each is recorded and moves time on by its length. */
class SteppingClock extends ManualClock {
  readonly slept: number[] = [];

  override sleep(ms: number): Promise<void> {
    this.slept.push(ms);
    this.advance(ms);
    return Promise.resolve();
  }
}

/** Lets every settled promise run its callbacks. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the pacer', () => {
  it('never waits without a rate', async () => {
    const clock = new SteppingClock();
    const pacer = new Pacer(undefined, clock);
    await pacer.wait(1_000_000);
    expect(clock.slept).toEqual([]);
  });

  it('sleeps on its clock until the items done since the start are within the rate', async () => {
    const clock = new ManualClock();
    const pacer = new Pacer(10, clock);
    let woke = false;
    const waiting = pacer.wait(5).then(() => (woke = true));
    await flush();
    clock.advance(499);
    await flush();
    expect(woke).toBe(false);
    clock.advance(1);
    await waiting;
    expect(woke).toBe(true);
  });

  it('counts from the start, so time already spent is not waited again', async () => {
    const clock = new SteppingClock();
    const pacer = new Pacer(100, clock);
    clock.advance(150);
    await pacer.wait(10); // due at 100 ms: already past
    await pacer.wait(20); // due at 200 ms
    expect(clock.slept).toEqual([50]);
  });
});

const moveRequest = (clock: ManualClock, over: Partial<MoveRequest> = {}): MoveRequest => ({
  from: 'parking',
  to: 'work',
  what: 'ready',
  batch: 100,
  ratePerSecond: 10,
  clock,
  dryRun: false,
  runId: 'run-1',
  onBatch: async () => undefined,
  shouldStop: () => false,
  ...over,
});

describe('the Redis move', () => {
  it('keeps --rate through the pacer on the request clock', async () => {
    const ready = [
      '{"uuid":"a"}',
      '{"uuid":"b"}',
      '{"uuid":"c"}',
      '{"uuid":"d"}',
      '{"uuid":"e"}',
      '{"uuid":"f"}',
    ];
    const client = {
      llen: async () => ready.length,
      exists: async () => 1,
      del: async () => 1,
      // The script's reply: four values per job (id, SHA-1, bytes, payload when no id was read).
      eval: async (_script: string, keys: number, ...args: string[]) =>
        ready.splice(0, Number(args[keys])).flatMap((m) => ['', 'sha1', m.length, m]),
    };
    const clock = new SteppingClock();
    const result = await moveJobs(
      { client: client as unknown as Redis, layout: { framework: 'laravel', prefix: '' }, broker: 'redis' },
      moveRequest(clock, { journal: { open: async () => 1, settle: async () => undefined } }),
    );
    // 10 jobs/s: batches of 2, each due 200 ms after the one before.
    expect(result.moved).toBe(6);
    expect(clock.slept).toEqual([200, 200, 200]);
  });
});

function message(body: string): GetMessage {
  return {
    content: Buffer.from(body),
    fields: { deliveryTag: 1, redelivered: false, exchange: '', routingKey: 'parking', messageCount: 0 },
    properties: { headers: {}, messageId: body } as unknown as GetMessage['properties'],
  };
}

describe('the RabbitMQ move', () => {
  it('keeps --rate through the pacer on the request clock', async () => {
    const queue = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'].map((body, i) => {
      const m = message(body);
      return { ...m, fields: { ...m.fields, deliveryTag: i + 1 } };
    });
    let deliver: ((m: GetMessage | null) => void) | undefined;
    const channel = {
      on: () => undefined,
      close: async () => undefined,
      checkQueue: async () => ({ messageCount: queue.length, consumerCount: 0 }),
      prefetch: async () => undefined,
      consume: async (_q: string, onMessage: (m: GetMessage | null) => void) => {
        deliver = onMessage;
        setImmediate(() => {
          for (const m of queue.splice(0)) deliver?.(m);
        });
        return { consumerTag: 'c1' };
      },
      cancel: async () => undefined,
      get: async () => queue.shift() ?? false,
      ack: () => undefined,
      nack: () => undefined,
      waitForConfirms: async () => undefined,
      publish: (_e: string, _k: string, _c: Buffer, _o: unknown, done?: (error: unknown) => void) => {
        done?.(null);
        return true;
      },
    };
    const connection = { createChannel: async () => channel, createConfirmChannel: async () => channel };
    const clock = new SteppingClock();
    const result = await moveRabbit({
      broker: 'rabbit',
      target: { vhost: '/', display: 'amqp://h', username: 'u' } as AmqpTarget,
      connection: connection as unknown as ChannelModel,
      request: moveRequest(clock, {
        batch: 2,
        journal: { open: async () => 1, settle: async () => undefined },
      }),
    });
    expect(result.moved).toBe(6);
    // 10 messages/s: batches of 2; the first starts at once, each next one 200 ms after it.
    expect(clock.slept).toEqual([200, 200]);
  });
});

describe('compensate --rate', () => {
  it('paces its batches through the pacer on the request clock', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskrecon-pacer-'));
    const db = openSqlite({ kind: 'sqlite', file: join(dir, 'tasks.sqlite') }, { create: true });
    try {
      for (const statement of asyncTaskDdl(db.dialect)) await db.execute(statement);
      for (let i = 1; i <= 6; i++)
        await db.execute(
          `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ('coupon', ?, ?, 3)`,
          [`B${i}`, `evt-${i}`],
        );
      const source = await bindSource(db, asyncTask, 'async-task');
      const clock = new SteppingClock();
      const result = await compensate(source, {
        action: 'retry',
        operator: 'tester',
        host: 'h',
        reason: null,
        dryRun: true,
        runId: 'run-1',
        ids: [1, 2, 3, 4, 5, 6],
        filter: {},
        limit: 0,
        rate: 10,
        clock,
      });
      expect(result.results.map((r) => r.outcome)).toEqual(Array(6).fill('would-apply'));
      expect(clock.slept).toEqual([200, 200, 200]);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
