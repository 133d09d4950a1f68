import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connect.js';
import type { Db } from '../../src/db/types.js';
import { EFFECT_TABLE } from '../../src/db/sql/reference-effect.js';
import { startReferenceHandler, type ReferenceHandler } from '../../src/verbs/drill/reference-handler.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

let pgdb: PgTestDatabase;
let db: Db;
let handler: ReferenceHandler;

beforeAll(async () => {
  pgdb = await createPgDatabase('pg_reference');
  db = await connect(pgdb.dsn);
  handler = await startReferenceHandler(db);
});

afterAll(async () => {
  await handler?.close();
  await db?.close();
  await pgdb?.drop();
});

async function post(eventId: string, bizId: string): Promise<{ status: number; body: string }> {
  const response = await request(handler.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': eventId },
    body: JSON.stringify({ eventId, bizType: 'coupon', bizId, payload: {}, attempt: 1 }),
    signal: AbortSignal.timeout(5000),
  });
  return { status: response.statusCode, body: await response.body.text() };
}

describe("the drills' reference handler on PostgreSQL", () => {
  it('creates its effect tables and applies an event once, however often it is delivered', async () => {
    expect(await post('e1', 'PAY1')).toMatchObject({ status: 200, body: '{"ok":true,"outcome":"applied"}' });
    expect(await post('e1', 'PAY1')).toMatchObject({
      status: 200,
      body: '{"ok":true,"outcome":"duplicate"}',
    });
    await Promise.all([post('e2', 'PAY2'), post('e2', 'PAY2'), post('e2', 'PAY2')]);
    const rows = await pgdb.rows<{ order_id: string; n: string }>(
      `SELECT order_id, count(*) AS n FROM ${EFFECT_TABLE} GROUP BY order_id ORDER BY order_id`,
    );
    expect(rows.map((r) => [r.order_id, Number(r.n)])).toEqual([
      ['PAY1', 1],
      ['PAY2', 1],
    ]);
  });
});
