import type { Channel, GetMessage } from 'amqplib';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmqpUrl } from '../../src/brokers/rabbitmq/connection.js';
import { BatchCarrier } from '../../src/brokers/rabbitmq/move-batch.js';
import type { ConfirmedPublisher } from '../../src/brokers/rabbitmq/move-publish.js';
import {
  matches,
  messageJobId,
  MOVED_RUN_HEADER,
  republishOptions,
} from '../../src/brokers/rabbitmq/move.js';
import type { BatchIntents, MovedJob, MoveRequest } from '../../src/brokers/types.js';
import { connect } from '../../src/db/connect.js';
import { auditDdl } from '../../src/db/ddl.js';
import { JOB_BATCH_TASK_ID } from '../../src/db/port/index.js';
import type { Db } from '../../src/db/types.js';
import { latestAudit } from '../../src/verbs/audit/audit.js';
import { auditRows, batchAuditRows } from '../../src/verbs/queues/move-audit.js';
import { rabbitIntents, settleKilledMoves } from '../../src/verbs/queues/rabbit-intents.js';

function message(body: string | Buffer, properties: Record<string, unknown> = {}): GetMessage {
  return {
    content: Buffer.isBuffer(body) ? body : Buffer.from(body),
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

describe('the audit of a moved message', () => {
  const meta = {
    operator: 'ops@host',
    host: 'host',
    action: 'queue-move',
    broker: 'rabbit',
    reason: 'replay',
    runId: 'run-1',
  };
  const sha1 = (bytes: Buffer) => createHash('sha1').update(bytes).digest('hex');

  /** Carries one batch through a BatchCarrier on stand-in channels; out: the jobs it settled as moved. */
  async function carried(bodies: Buffer[]): Promise<MovedJob[]> {
    const settled: MovedJob[] = [];
    const source = { ack: () => undefined, nack: () => undefined, checkQueue: async () => ({}) };
    const publisher = { publish: async () => true };
    const intents: BatchIntents = {
      open: async () => 1,
      settle: async (_handle, moved) => void settled.push(...moved),
    };
    const carrier = new BatchCarrier(
      request({ intents }),
      source as unknown as Channel,
      publisher as unknown as ConfirmedPublisher,
      { exchange: '', routingKey: 'work', to: 'work', username: 'guest' },
    );
    await carrier.carry(bodies.map((b, i) => message(b, { messageId: `m-${i}` })));
    return settled;
  }

  it('is the body digest read from the bytes, the rows the same as the UTF-8 text gave them', async () => {
    const utf8 = [
      Buffer.from('{"eventId":"e1"}'),
      Buffer.from('{"name":"Zoë 中文 🙂"}'),
      Buffer.from('\uFEFF{"bom":true}'),
      Buffer.alloc(0),
      Buffer.from('x'.repeat(70_000)),
    ];
    const jobs = await carried(utf8);
    expect(jobs.map((j) => j.jobId)).toEqual(utf8.map((_, i) => `m-${i}`));
    jobs.forEach((job, i) => {
      const body = utf8[i] as Buffer;
      expect(job.payload).toBeUndefined();
      expect(job.digest).toEqual({ sha1: sha1(body), bytes: body.length });
    });
    // What the rows held when the job carried the body as text.
    const asText = jobs.map(({ digest: _digest, ...job }, i) => ({
      ...job,
      payload: (utf8[i] as Buffer).toString('utf8'),
    }));
    expect(batchAuditRows(jobs, meta)).toEqual(batchAuditRows(asText, meta));
    expect(auditRows(jobs, meta)).toEqual(auditRows(asText, meta));
  });

  it('digests a body that is no UTF-8 as it is (the text form replaced its bytes)', async () => {
    const odd = [Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), Buffer.from([0xc3]), Buffer.from([0xed, 0xa0, 0x80])];
    const jobs = await carried(odd);
    jobs.forEach((job, i) => {
      const body = odd[i] as Buffer;
      expect(job.digest).toEqual({ sha1: sha1(body), bytes: body.length });
      const text = body.toString('utf8');
      expect(sha1(Buffer.from(text))).not.toBe(sha1(body));
    });
    const before = JSON.parse(String(batchAuditRows(jobs, meta)[0]?.beforeJson)) as { jobs: unknown[] };
    expect(before.jobs).toEqual(odd.map((b, i) => [`m-${i}`, sha1(b), b.length]));
  });

  describe('settled through the intents (SQLite)', () => {
    let dir: string;
    let db: Db;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'taskrecon-rabbit-audit-'));
      db = await connect(`sqlite:${join(dir, 'audit.db')}`, { create: true });
      for (const statement of auditDdl(db.dialect)) await db.execute(statement);
    });
    afterAll(async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('one job-batch row per batch, read back as one entry per message with its body digest', async () => {
      const bodies = [Buffer.from('{"a":1}'), Buffer.from([0xff, 0x00]), Buffer.from('é')];
      const jobs = await carried(bodies);
      const intents = rabbitIntents(db, meta, 'rabbit');
      await intents.settle(await intents.open(jobs), jobs, []);
      const raw = await db.query<{ task_id: string }>('SELECT task_id FROM taskrecon_audit');
      expect(raw.map((r) => r.task_id)).toEqual([JOB_BATCH_TASK_ID]);
      const entries = await latestAudit(db, { runId: 'run-1', limit: 100 });
      expect(entries.map((e) => [e.taskId, e.eventId, e.table, e.from, e.to, e.before, e.after])).toEqual(
        bodies.map((b, i) => [
          `m-${i}`,
          `m-${i}`,
          'parking',
          null,
          null,
          { queue: 'parking', set: null, sha1: sha1(b), bytes: b.length },
          { queue: 'work', set: null },
        ]),
      );
    });

    it("a killed run's batch: one job-batch row, every message of it marked as a possible duplicate", async () => {
      const killed = rabbitIntents(db, { ...meta, runId: 'run-killed' }, 'rabbit');
      const jobs = await carried([Buffer.from('a'), Buffer.from('b')]);
      const intent = await killed.open(jobs);
      const settled = await settleKilledMoves(db, 'rabbit', 'run-2', false);
      expect(settled.possibleDuplicates).toEqual([
        { runId: 'run-killed', from: 'parking', to: 'work', messageIds: ['m-0', 'm-1'] },
      ]);
      expect(settled.settledIntents).toEqual([
        expect.objectContaining({ id: intent, state: 'partial', jobs: 2, audited: 2 }),
      ]);
      const raw = await db.query<{ task_id: string }>(
        "SELECT task_id FROM taskrecon_audit WHERE run_id = 'run-killed'",
      );
      expect(raw.map((r) => r.task_id)).toEqual([JOB_BATCH_TASK_ID]);
      const entries = await latestAudit(db, { runId: 'run-killed', limit: 100 });
      expect(entries.map((e) => [e.taskId, e.before, e.after])).toEqual(
        ['m-0', 'm-1'].map((id) => [
          id,
          { queue: 'parking', set: null, sha1: null, bytes: null },
          { queue: 'work', set: null, possibleDuplicate: true, settledBy: 'run-2' },
        ]),
      );
    });
  });
});
