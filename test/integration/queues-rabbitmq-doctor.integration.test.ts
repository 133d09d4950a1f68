import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';
import { closedLoopbackPort } from '../fixtures/redrive/counting-handler.js';
import {
  declareArticleTopology,
  declareCorrectTopology,
  scratchVhost,
  type ScratchVhost,
} from '../support/rabbitmq.js';

// BrokerClient.doctor() for RabbitMQ (what `doctor` prints per broker): AMQP and the management
// API reachable, then durability and dead-letter wiring — each able to fail.

let good: ScratchVhost;
let article: ScratchVhost;

beforeAll(async () => {
  good = await scratchVhost('doctor-good');
  article = await scratchVhost('doctor-article');
  await declareCorrectTopology(await good.channel());
  const a = await article.channel();
  await declareArticleTopology(a);
  await a.assertQueue('transient', { durable: false });
});
afterAll(async () => {
  await good?.drop();
  await article?.drop();
});

async function doctor(url: string, api?: string) {
  const broker = openRabbitBroker('rabbit', { kind: 'rabbitmq', url, api });
  try {
    return Object.fromEntries((await broker.doctor()).map((c) => [c.name, c]));
  } finally {
    await broker.close();
  }
}

describe('RabbitMQ doctor checks', () => {
  it('all ok on a correct, durable topology', async () => {
    const checks = await doctor(good.amqpUrl, good.apiUrl);
    expect(Object.values(checks).map((c) => `${c.name}:${c.status}`)).toEqual([
      'amqp:ok',
      'management-api:ok',
      'durability:ok',
      'dead-letter: ttl-without-dlx:ok',
      'dead-letter: dlx-unroutable:ok',
      'dead-letter: ttl-long:ok',
    ]);
  });

  it('fails the wiring and durability of the article topology with a transient queue', async () => {
    const checks = await doctor(article.amqpUrl, article.apiUrl);
    expect(checks['dead-letter: ttl-without-dlx']).toMatchObject({ status: 'fail' });
    expect(checks['dead-letter: ttl-without-dlx']?.detail).toContain("'retry_queue'");
    expect(checks['durability']).toMatchObject({ status: 'warn' });
    expect(checks['durability']?.detail).toContain("'transient'");
  });

  it('an unreachable broker or API is a fail naming it; no api is a warn', async () => {
    const closed = await closedLoopbackPort();
    const down = await doctor(`amqp://guest:guest@127.0.0.1:${closed}/%2F`);
    expect(down['amqp']).toMatchObject({ status: 'fail' });
    expect(down['amqp']?.detail).toMatch(/cannot reach RabbitMQ at amqp:\/\/guest:\*\*\*@/);
    const noApi = await doctor(good.amqpUrl, `http://guest:guest@127.0.0.1:${closed}`);
    expect(noApi['management-api']).toMatchObject({ status: 'fail' });
    const without = await doctor(good.amqpUrl);
    expect(without['management-api']).toMatchObject({ status: 'warn' });
  });
});
