import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { rabbitRunAlive } from '../../src/brokers/rabbitmq/run-name.js';

/** The machine's RabbitMQ (guest/guest on loopback) and its management API. */
export const AMQP_HOST = '127.0.0.1:5672';
export const API_BASE = 'http://127.0.0.1:15672';
const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
const HOW_TO_START =
  'RabbitMQ with its management API must run on 127.0.0.1 (5672 and 15672, guest/guest): ' +
  '`rabbitmq-plugins enable rabbitmq_management && rabbitmq-server -detached` (CI: .ci/run does it).';

export async function api(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  let response;
  try {
    response = await request(`${API_BASE}/api${path}`, {
      method: method as 'GET',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new Error(`${HOW_TO_START} (${(error as Error).message})`);
  }
  const text = await response.body.text();
  return { status: response.statusCode, json: text ? (JSON.parse(text) as unknown) : null };
}

/** A vhost of its own for one test file, guest allowed everything; `drop()` deletes it and all in it. */
export interface ScratchVhost {
  vhost: string;
  amqpUrl: string;
  apiUrl: string;
  connect(): Promise<ChannelModel>;
  /** A channel on a connection kept for the file (closed by drop). */
  channel(): Promise<Channel>;
  drop(): Promise<void>;
}

export async function scratchVhost(label: string): Promise<ScratchVhost> {
  const vhost = `taskrecon-test-${label}-${randomBytes(3).toString('hex')}`;
  const put = await api('PUT', `/vhosts/${encodeURIComponent(vhost)}`, {});
  if (put.status >= 300) throw new Error(`cannot create vhost ${vhost}: HTTP ${put.status}. ${HOW_TO_START}`);
  await api('PUT', `/permissions/${encodeURIComponent(vhost)}/guest`, {
    configure: '.*',
    write: '.*',
    read: '.*',
  });
  const amqpUrl = `amqp://guest:guest@${AMQP_HOST}/${encodeURIComponent(vhost)}`;
  const connections: ChannelModel[] = [];
  const connect = async () => {
    const c = await amqp.connect(amqpUrl);
    c.on('error', () => undefined);
    connections.push(c);
    return c;
  };
  let shared: ChannelModel | undefined;
  return {
    vhost,
    amqpUrl,
    apiUrl: 'http://guest:guest@127.0.0.1:15672',
    connect,
    async channel() {
      shared ??= await connect();
      const ch = await shared.createChannel();
      ch.on('error', () => undefined);
      return ch;
    },
    async drop() {
      await Promise.allSettled(connections.map((c) => c.close()));
      await api('DELETE', `/vhosts/${encodeURIComponent(vhost)}`);
    },
  };
}

/** Ready count by passive declare (exact, not the API's sampled figure). */
export async function depth(ch: Channel, queue: string): Promise<number> {
  return (await ch.checkQueue(queue)).messageCount;
}

/** Waits until `fn` holds (polling), or throws after `ms`. */
export async function until(fn: () => Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Waits until a move run whose connection has closed is gone as a later run sees it: the broker
 * deletes the run's exclusive queue just after the connection closes (not with it), and a run
 * asking before that finds the queue held and leaves the run's open batches to it.
 */
export async function untilRunGone(v: ScratchVhost, runId: string, ms = 10_000): Promise<void> {
  const connection = await v.connect();
  try {
    await until(
      async () => (await rabbitRunAlive(connection, runId)) === false,
      ms,
      `run ${runId} to be gone`,
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/**
 * Drains a queue with a consumer on a connection of its own until it has been quiet for a moment
 * (`ch` reads the depth), acking every message.
 */
export async function drainQueue(v: ScratchVhost, ch: Channel, queue: string): Promise<ConsumeMessage[]> {
  const consumer = await (await v.connect()).createChannel();
  const got: ConsumeMessage[] = [];
  await consumer.consume(queue, (m) => {
    if (!m) return;
    got.push(m);
    consumer.ack(m);
  });
  let last = -1;
  await until(async () => {
    const settled = got.length === last && (await depth(ch, queue)) === 0;
    last = got.length;
    await new Promise((r) => setTimeout(r, 150));
    return settled;
  });
  await consumer.close();
  return got;
}

/**
 * The retry topology of the classic article, declared exactly as it is written: the business
 * queue dead-letters to retry_exchange with its own name as key; the delay queue has a 10 s TTL
 * and no dead-letter exchange. (The article never declares retry_exchange itself; it must exist
 * for the bind, so it is declared as a direct exchange.)
 */
export async function declareArticleTopology(ch: Channel, ttlMs = 10_000): Promise<void> {
  await ch.assertExchange('retry_exchange', 'direct', { durable: true });
  await ch.assertQueue('business_queue', {
    durable: true,
    arguments: { 'x-dead-letter-exchange': 'retry_exchange', 'x-dead-letter-routing-key': 'business_queue' },
  });
  await ch.assertQueue('retry_queue', { durable: true, arguments: { 'x-message-ttl': ttlMs } });
  await ch.bindQueue('retry_queue', 'retry_exchange', 'business_queue');
}

/**
 * The same topology corrected: the delay queue dead-letters back to the business queue through
 * the default exchange, and messages past maxRetries go to a parking queue (the consumer's job).
 */
export async function declareCorrectTopology(ch: Channel, ttlMs = 10_000): Promise<void> {
  await ch.assertExchange('retry_exchange', 'direct', { durable: true });
  await ch.assertQueue('business_queue', {
    durable: true,
    arguments: { 'x-dead-letter-exchange': 'retry_exchange', 'x-dead-letter-routing-key': 'business_queue' },
  });
  await ch.assertQueue('retry_queue', {
    durable: true,
    arguments: {
      'x-message-ttl': ttlMs,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'business_queue',
    },
  });
  await ch.bindQueue('retry_queue', 'retry_exchange', 'business_queue');
  await ch.assertQueue('parking_queue', { durable: true });
}
