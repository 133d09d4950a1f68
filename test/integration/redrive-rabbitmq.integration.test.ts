import type { Channel } from 'amqplib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { asyncTaskDdl } from '../../src/db/ddl.js';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { depth, scratchVhost, type ScratchVhost } from '../support/rabbitmq.js';
import { closedLoopbackPort } from '../fixtures/redrive/counting-handler.js';
import { configDir } from '../fixtures/redrive/seed.js';

// `redrive` with the rabbitmq dispatcher: the task row is published with confirms onto the
// consumer's queue, stays processing under its lease, and the consumer's own write settles it.
// A publish no queue takes, or a broker that cannot be reached, is retryable.

let schema: TestSchema;
let v: ScratchVhost;
let ch: Channel;
let cwd: string;

interface RedriveJson {
  claimed: number;
  delivered: number;
  retried: number;
  succeeded: number;
}

async function insert(bizType: string, eventId: string) {
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at)
     VALUES (?, ?, ?, '{"orderId":7}', 0, NOW() - INTERVAL 5 SECOND, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 1 HOUR)`,
    [bizType, `order-${eventId}`, eventId],
  );
}

async function row(eventId: string) {
  const [rows] = await schema.sql.query(
    'SELECT status, retry_count AS attempts, last_error AS lastError FROM async_task WHERE event_id = ?',
    [eventId],
  );
  const r = (rows as Array<Record<string, unknown>>)[0];
  return {
    status: Number(r?.status),
    attempts: Number(r?.attempts),
    lastError: r?.lastError as string | null,
  };
}

const redrive = () => runJson<RedriveJson>(['redrive', '--pause', '0ms', '--lease', '30s'], { cwd });

beforeAll(async () => {
  v = await scratchVhost('redrive');
  ch = await v.channel();
  await ch.assertQueue('task_queue', { durable: true });
  await ch.assertExchange('tasks', 'direct', { durable: true });
  await ch.bindQueue('task_queue', 'tasks', 'refund');
  schema = await createTestSchema('redrive_rabbitmq');
  for (const ddl of asyncTaskDdl(mysqlDialect)) await schema.sql.query(ddl);
  const closed = await closedLoopbackPort();
  cwd = configDir(
    [
      `db: ${schema.dsn}`,
      'brokers:',
      `  rabbit: { kind: rabbitmq, url: "${v.amqpUrl}" }`,
      `  down: { kind: rabbitmq, url: "amqp://guest:guest@127.0.0.1:${closed}/%2F" }`,
      'handlers:',
      '  coupon: { type: rabbitmq, broker: rabbit, queue: task_queue }',
      '  refund: { type: rabbitmq, broker: rabbit, exchange: tasks, routingKey: refund }',
      '  sms: { type: rabbitmq, broker: rabbit, queue: no_such_queue }',
      '  mail: { type: rabbitmq, broker: down, queue: task_queue }',
      '',
    ].join('\n'),
  );
  const init = await runJson(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  await v?.drop();
  await schema?.drop();
});

beforeEach(async () => {
  await schema.sql.query('DELETE FROM async_task');
  await ch.purgeQueue('task_queue');
});

describe('redrive onto RabbitMQ (rabbitmq)', () => {
  it('publishes the task envelope with confirms, persistent, message-id = event id; the row stays processing', async () => {
    await insert('coupon', 'evt-c1');
    await insert('refund', 'evt-r1');
    const run = await redrive();
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ claimed: 2, delivered: 2, retried: 0, succeeded: 0 });
    expect(await row('evt-c1')).toMatchObject({ status: 1, attempts: 0 });
    expect(await depth(ch, 'task_queue')).toBe(2);
    const got = [];
    for (let i = 0; i < 2; i++) {
      const m = await ch.get('task_queue', { noAck: true });
      if (m) got.push(m);
    }
    const byId = Object.fromEntries(got.map((m) => [m.properties.messageId, m]));
    expect(JSON.parse(byId['evt-c1']?.content.toString() ?? '{}')).toEqual({
      eventId: 'evt-c1',
      bizType: 'coupon',
      bizId: 'order-evt-c1',
      payload: { orderId: 7 },
      attempt: 1,
    });
    expect(byId['evt-r1']?.properties.deliveryMode).toBe(2);
    expect(byId['evt-r1']?.fields.routingKey).toBe('refund');
    // The consumer settles it; a second run inside the lease publishes nothing.
    await schema.sql.query("UPDATE async_task SET status = 2 WHERE event_id = 'evt-c1' AND status = 1");
    expect((await redrive()).json).toMatchObject({ claimed: 0, delivered: 0 });
    expect(await depth(ch, 'task_queue')).toBe(0);
  });

  it('a publish no queue takes, and an unreachable broker, are retryable: back to pending with the reason', async () => {
    await insert('sms', 'evt-s1');
    await insert('mail', 'evt-m1');
    const run = await redrive();
    // Every attempt of the run failed: redrive says so with exit 1.
    expect(run.code, run.stderr).toBe(1);
    expect(run.json).toMatchObject({ claimed: 2, delivered: 0, retried: 2 });
    expect(await row('evt-s1')).toMatchObject({ status: 0, attempts: 1 });
    expect((await row('evt-s1')).lastError).toMatch(/routed to no queue/);
    expect((await row('evt-m1')).lastError).toMatch(
      /cannot reach RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1/,
    );
  });

  it('refuses a handler with no queue or exchange, naming the handler', async () => {
    const bad = configDir(
      [
        `db: ${schema.dsn}`,
        'brokers:',
        `  rabbit: { kind: rabbitmq, url: "${v.amqpUrl}" }`,
        'handlers:',
        '  refund: { type: rabbitmq, broker: rabbit }',
        '',
      ].join('\n'),
    );
    const run = await runJson<{ error: { message: string } }>(['redrive'], { cwd: bad });
    expect(run.code).toBe(3);
    expect(run.json.error.message).toMatch(/handlers\.refund: name the queue/);
  });
});
