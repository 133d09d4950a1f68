import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { startCountingHandler, type CountingHandler } from '../fixtures/redrive/counting-handler.js';
import { configDir, seedDueTasks, statusCounts } from '../fixtures/redrive/seed.js';
import { startCli, waitFor } from '../fixtures/redrive/spawn.js';

interface RedriveJson {
  claimed: number;
  succeeded: number;
  failed: number;
  retried: number;
  lostRace: number;
  recoveredStuck: number;
  released: number;
  interrupted: boolean;
}

let schema: TestSchema;
let handler: CountingHandler;
let cwd: string;
// A short lease for the run that breaks, so recovery is a matter of seconds; a long one for the run that recovers.
const BREAKING = [
  'redrive',
  '--pause',
  '0ms',
  '--batch',
  '50',
  '--concurrency',
  '8',
  '--lease',
  '2s',
  '--stuck-after',
  '1s',
];
const RECOVERING = ['redrive', '--pause', '0ms', '--lease', '60s', '--stuck-after', '1s'];
const AFTER_LEASE_MS = 3_200;

beforeAll(async () => {
  schema = await createTestSchema('redrive_failures');
  handler = await startCountingHandler();
  cwd = configDir(
    `db: ${schema.dsn}\nhandlers:\n  default: { type: http, url: "${handler.url}", timeout: 10s }\n`,
  );
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  await handler?.close();
  await schema?.drop();
});

beforeEach(async () => {
  await schema.sql.query('DELETE FROM async_task');
  handler.reset();
});

async function processingCount(): Promise<number> {
  const [rows] = await schema.sql.query('SELECT COUNT(*) AS n FROM async_task WHERE status = 1');
  return Number((rows as Array<{ n: number }>)[0]?.n);
}

describe('redrive when things break', () => {
  it('kill -9 mid-batch: after the lease a second run recovers every abandoned task, each effect once', async () => {
    const events = await seedDueTasks(schema.sql, 300, { prefix: 'crash' });
    // An idempotent handler that is slow enough for the kill to land mid-batch.
    handler.setBehaviour(() => ({ delayMs: 100 }));
    const victim = startCli([...BREAKING, '--json'], { cwd });
    await waitFor(() => handler.stats().total >= 40, 30_000, 'deliveries');
    victim.child.kill('SIGKILL');
    const killed = await victim.done;
    expect(killed.signal).toBe('SIGKILL');
    const abandoned = await processingCount();
    expect(abandoned).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, AFTER_LEASE_MS));
    handler.setBehaviour(() => undefined);
    const second = await runJson<RedriveJson>(RECOVERING, { cwd });
    expect(second.code, second.stderr).toBe(0);
    assertMatchesSchema('redrive', second.json);
    expect(second.json.recoveredStuck).toBe(abandoned);
    expect(second.json.lostRace).toBe(0);
    expect(await statusCounts(schema.sql)).toEqual({ '2': 300 });
    // Every task's effect exists once, though some were delivered twice (attempts 1 and 2).
    expect(events.every((e) => handler.effects.get(e) === 1)).toBe(true);
    expect(handler.stats().duplicateDeliveriesPerAttempt).toBe(0);
    expect([...handler.deliveries.values()].some((n) => n === 2)).toBe(true);
  });

  it('SIGTERM: stops claiming, settles tasks in flight, hands back the rest, exits 0', async () => {
    await seedDueTasks(schema.sql, 300, { prefix: 'term' });
    handler.setBehaviour(() => ({ delayMs: 300 }));
    const run = startCli(['redrive', '--pause', '0ms', '--batch', '100', '--concurrency', '4', '--json'], {
      cwd,
    });
    await waitFor(() => handler.stats().total >= 8, 30_000, 'deliveries');
    run.child.kill('SIGTERM');
    const done = await run.done;
    expect(done.code, done.stderr).toBe(0);
    const json = JSON.parse(done.stdout) as RedriveJson;
    assertMatchesSchema('redrive', json);
    expect(json.interrupted).toBe(true);
    expect(json.released).toBeGreaterThan(0);
    expect(json.claimed).toBe(json.succeeded + json.released);
    expect(await processingCount()).toBe(0);
    const counts = await statusCounts(schema.sql);
    expect(counts['2']).toBe(json.succeeded);
    expect(counts['0']).toBe(300 - json.succeeded);
    // Nothing in flight was dropped: every delivery the handler answered is recorded as a success.
    expect(handler.stats().total).toBe(json.succeeded);
    // Released tasks were not counted as attempts.
    const [rows] = await schema.sql.query('SELECT MAX(retry_count) AS m FROM async_task');
    expect(Number((rows as Array<{ m: number }>)[0]?.m)).toBe(0);
  });

  it('Ctrl-C (SIGINT): settles tasks in flight like SIGTERM, prints the result, and exits 130', async () => {
    await seedDueTasks(schema.sql, 300, { prefix: 'int' });
    handler.setBehaviour(() => ({ delayMs: 300 }));
    const run = startCli(['redrive', '--pause', '0ms', '--batch', '100', '--concurrency', '4', '--json'], {
      cwd,
    });
    await waitFor(() => handler.stats().total >= 8, 30_000, 'deliveries');
    run.child.kill('SIGINT');
    const done = await run.done;
    expect(done.code, done.stderr).toBe(130);
    expect(done.stderr).toMatch(/SIGINT: no more claims/);
    const json = JSON.parse(done.stdout) as RedriveJson;
    assertMatchesSchema('redrive', json);
    expect(json.interrupted).toBe(true);
    expect(json.claimed).toBe(json.succeeded + json.released);
    expect(await processingCount()).toBe(0);
    expect((await statusCounts(schema.sql))['2']).toBe(json.succeeded);
  });

  it('MariaDB connections killed mid-run: exit 3 with a clear message, nothing half-written, the next run completes', async () => {
    await seedDueTasks(schema.sql, 2_000, { prefix: 'kill' });
    handler.setBehaviour(() => ({ delayMs: 20 }));
    const run = startCli(BREAKING, { cwd });
    await waitFor(() => handler.stats().total >= 100, 30_000, 'deliveries');
    // An operator (or a failover) kills every connection of the run, a few times over.
    const [self] = await schema.sql.query('SELECT CONNECTION_ID() AS id');
    const selfId = Number((self as Array<{ id: number }>)[0]?.id);
    // A connection killed while idle in the pool is replaced silently (nothing was in flight on it); one killed
    // during a statement stops the run. Keep killing until the run stops (bounded), as a failover would.
    const until = Date.now() + 20_000;
    let exited = false;
    void run.done.then(() => (exited = true));
    while (!exited && Date.now() < until) {
      const [rows] = await schema.sql.query(
        'SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> ?',
        [schema.name, selfId],
      );
      for (const { id } of rows as Array<{ id: number }>)
        await schema.sql.query(`KILL CONNECTION ${Number(id)}`).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 5));
    }
    const done = await run.done;
    expect(done.code, done.stdout + done.stderr).toBe(3);
    expect(done.stderr).toMatch(/Error: .*(connection|killed|lost)/i);
    expect(done.stderr).toMatch(/nothing was half-written/);
    expect(done.stderr).not.toMatch(/\n\s+at /);
    // Nothing half-written: every row is untouched pending, a claim with its lease, or a finished success.
    const [rows] = await schema.sql.query(
      `SELECT status, retry_count, last_error IS NULL AS noError, COUNT(*) AS n FROM async_task GROUP BY status, retry_count, last_error IS NULL`,
    );
    for (const r of rows as Array<{ status: number; retry_count: number; noError: number }>) {
      expect([0, 1, 2]).toContain(Number(r.status));
      expect(Number(r.retry_count)).toBe(0);
      expect(Number(r.noError)).toBe(1);
    }
    await new Promise((r) => setTimeout(r, AFTER_LEASE_MS));
    handler.setBehaviour(() => undefined);
    const next = await runJson<RedriveJson>(RECOVERING, { cwd });
    expect(next.code, next.stderr).toBe(0);
    expect(await statusCounts(schema.sql)).toEqual({ '2': 2_000 });
    expect(handler.stats().duplicateDeliveriesPerAttempt).toBe(0);
  });
});
