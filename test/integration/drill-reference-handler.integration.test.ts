import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EFFECT_TABLE } from '../../src/db/sql/reference-effect.js';
import { closedLoopbackUrl, startSilentListener } from '../../src/verbs/drill/dead-targets.js';
import { startReferenceHandler, type ReferenceHandler } from '../../src/verbs/drill/reference-handler.js';
import { createDrillSandbox, type DrillSandbox } from '../../src/verbs/drill/sandbox.js';

let sandbox: DrillSandbox;
let handler: ReferenceHandler;
let broken: ReferenceHandler;

beforeAll(async () => {
  sandbox = await createDrillSandbox();
  handler = await startReferenceHandler(sandbox.db);
  broken = await startReferenceHandler(sandbox.db, { variant: 'non-idempotent' });
});
afterAll(async () => {
  await handler?.close();
  await broken?.close();
  await sandbox?.dispose(false);
});

async function post(
  url: string,
  eventId: string,
  bizId: string,
  timeoutMs = 2000,
): Promise<{ status: number; body: string }> {
  const response = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': eventId },
    body: JSON.stringify({ eventId, bizType: 'coupon', bizId, payload: {}, attempt: 1 }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: response.statusCode, body: await response.body.text() };
}

async function rows(bizId: string): Promise<number> {
  const [row] = await sandbox.db.query<{ n: number }>(
    `SELECT COUNT(*) AS n FROM ${EFFECT_TABLE} WHERE order_id = ?`,
    [bizId],
  );
  return Number(row?.n);
}

describe('the reference handler', () => {
  it('applies an event once, however often it is delivered', async () => {
    expect(await post(handler.url, 'e1', 'PAY1')).toMatchObject({
      status: 200,
      body: '{"ok":true,"outcome":"applied"}',
    });
    expect(await post(handler.url, 'e1', 'PAY1')).toMatchObject({
      status: 200,
      body: '{"ok":true,"outcome":"duplicate"}',
    });
    await Promise.all([
      post(handler.url, 'e2', 'PAY2'),
      post(handler.url, 'e2', 'PAY2'),
      post(handler.url, 'e2', 'PAY2'),
    ]);
    expect(await rows('PAY1')).toBe(1);
    expect(await rows('PAY2')).toBe(1);
    expect(handler.deliveriesOf('e2')).toBe(3);
  });

  it('applies every delivery in its deliberately broken variant', async () => {
    await post(broken.url, 'e3', 'PAY3');
    await post(broken.url, 'e3', 'PAY3');
    expect(await rows('PAY3')).toBe(2);
  });

  it('answers 422 without applying anything when rejecting, and 400 to a body that is not a delivery', async () => {
    handler.fault = 'reject';
    expect((await post(handler.url, 'e4', 'PAY4')).status).toBe(422);
    handler.fault = 'none';
    expect(await rows('PAY4')).toBe(0);
    const bad = await request(handler.url, { method: 'POST', body: 'not json' });
    expect(bad.statusCode).toBe(400);
    await bad.body.dump();
  });

  it('never answers when hanging, and applies then answers late when slow', async () => {
    handler.fault = 'hang';
    await expect(post(handler.url, 'e5', 'PAY5', 300)).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    expect(await rows('PAY5')).toBe(0);
    handler.fault = 'slow';
    handler.slowMs = 800;
    await expect(post(handler.url, 'e6', 'PAY6', 300)).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    expect(await rows('PAY6')).toBe(1);
    const started = Date.now();
    expect((await post(handler.url, 'e7', 'PAY7', 2000)).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(750);
    handler.fault = 'none';
  });
});

describe('dead targets on loopback', () => {
  it('refuses connections on a closed port', async () => {
    const url = await closedLoopbackUrl();
    expect(new URL(url).hostname).toBe('127.0.0.1');
    await expect(post(url, 'e8', 'PAY8')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('accepts and never answers on a silent listener', async () => {
    const silent = await startSilentListener();
    try {
      await expect(post(silent.url, 'e9', 'PAY9', 300)).rejects.toMatchObject({
        name: 'TimeoutError',
      });
      expect(silent.accepted).toBe(1);
    } finally {
      await silent.close();
    }
  });
});
