import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { startCountingHandler, type CountingHandler } from '../fixtures/redrive/counting-handler.js';
import { configDir } from '../fixtures/redrive/seed.js';

interface RedriveJson {
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  lostRace: number;
  recoveredStuck: number;
  skipLocked: boolean;
}

let db: PgTestDatabase;
let handler: CountingHandler;

beforeAll(async () => {
  db = await createPgDatabase('pg_redrive');
  handler = await startCountingHandler();
  const cwd = configDir(`db: ${db.dsn}\n`);
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  await handler?.close();
  await db?.drop();
});

/** `count` due pending rows (event ids `${prefix}-<n>`), next retry a minute ago. */
async function seedDue(count: number, prefix: string, bizType = 'coupon'): Promise<string[]> {
  await db.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at)
     SELECT $1, 'order-' || n, $2 || '-' || n, jsonb_build_object('orderId', n), 0,
            now() - interval '1 minute', now() - interval '1 minute', now() - interval '1 minute'
       FROM generate_series(0, $3 - 1) AS n`,
    [bizType, prefix, count],
  );
  return Array.from({ length: count }, (_v, i) => `${prefix}-${i}`);
}

async function statusCounts(bizType: string): Promise<Record<string, number>> {
  const rows = await db.rows<{ status: number; n: string }>(
    'SELECT status, count(*) AS n FROM async_task WHERE biz_type = $1 GROUP BY status',
    [bizType],
  );
  return Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
}

const sum = (runs: RedriveJson[], key: keyof RedriveJson) => runs.reduce((n, r) => n + Number(r[key]), 0);

describe('redrive on PostgreSQL', () => {
  it('marks due tasks done with a mark-only handler, leaving tasks not yet due alone', async () => {
    await seedDue(20, 'mark', 'points');
    await db.sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time) VALUES ('points', 'later', 'later-1', 0, now() + interval '1 hour')`,
    );
    const cwd = configDir(`db: ${db.dsn}\nhandlers:\n  default: { type: mark-only }\n`);
    const { code, json, stderr } = await runJson<RedriveJson>(['redrive', '--biz-type', 'points'], {
      cwd,
      env: { TZ: 'Asia/Shanghai' },
    });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('redrive', json);
    expect(json).toMatchObject({ claimed: 20, succeeded: 20, failed: 0, lostRace: 0, skipLocked: true });
    expect(await statusCounts('points')).toEqual({ '0': 1, '2': 20 });
  });

  it('two concurrent processes over 2,000 due tasks deliver each exactly once', async () => {
    const events = await seedDue(2_000, 'ev');
    handler.reset();
    const cwd = configDir(
      `db: ${db.dsn}\nhandlers:\n  default: { type: http, url: "${handler.url}", timeout: 60s }\n`,
    );
    const runs = await Promise.all(
      [1, 2].map(() =>
        runJson<RedriveJson>(['redrive', '--biz-type', 'coupon', '--pause', '0ms', '--concurrency', '16'], {
          cwd,
          timeoutMs: 150_000,
        }),
      ),
    );
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(0);
      assertMatchesSchema('redrive', run.json);
    }
    const results = runs.map((r) => r.json);
    expect(results.every((r) => r.skipLocked)).toBe(true);
    expect(sum(results, 'claimed')).toBe(2_000);
    expect(sum(results, 'succeeded')).toBe(2_000);
    expect(sum(results, 'lostRace')).toBe(0);
    expect(handler.stats()).toMatchObject({
      total: 2_000,
      distinctEvents: 2_000,
      duplicateDeliveriesPerAttempt: 0,
    });
    expect(events.every((e) => handler.byAttempt.get(`${e}#1`) === 1)).toBe(true);
    expect(await statusCounts('coupon')).toEqual({ '2': 2_000 });
  }, 180_000);
});
