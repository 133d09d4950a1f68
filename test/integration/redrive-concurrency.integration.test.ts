import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { startCountingHandler, type CountingHandler } from '../fixtures/redrive/counting-handler.js';
import { configDir, seedDueTasks, statusCounts } from '../fixtures/redrive/seed.js';
import { waitFor } from '../fixtures/redrive/spawn.js';

interface RedriveJson {
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  lostRace: number;
  recoveredStuck: number;
  skipLocked: boolean;
}

let schema: TestSchema;
let handler: CountingHandler;
let cwd: string;

beforeAll(async () => {
  schema = await createTestSchema('redrive_concurrency', { timeZone: '+08:00' });
  handler = await startCountingHandler();
  cwd = configDir(
    `db: ${schema.dsn}\nappTimeZone: "+08:00"\nhandlers:\n  default: { type: http, url: "${handler.url}", timeout: 120s }\n`,
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
  handler.setBehaviour(() => undefined);
});

const sum = (runs: RedriveJson[], key: keyof RedriveJson) => runs.reduce((n, r) => n + Number(r[key]), 0);

describe('redrive with concurrent processes', () => {
  it('four processes over 20,000 due tasks deliver each exactly once, lose none and leave none processing', async () => {
    const events = await seedDueTasks(schema.sql, 20_000);
    const runs = await Promise.all(
      [1, 2, 3, 4].map(() =>
        runJson<RedriveJson>(['redrive', '--pause', '0ms', '--concurrency', '32'], {
          cwd,
          env: { TZ: 'America/New_York' },
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
    expect(sum(results, 'claimed')).toBe(20_000);
    expect(sum(results, 'succeeded')).toBe(20_000);
    expect(sum(results, 'lostRace')).toBe(0);
    // The work was shared, not done by one process while the others waited.
    expect(results.filter((r) => r.claimed > 0).length).toBeGreaterThanOrEqual(2);
    expect(handler.stats()).toMatchObject({
      total: 20_000,
      distinctEvents: 20_000,
      duplicateDeliveriesPerAttempt: 0,
    });
    expect(events.every((e) => handler.byAttempt.get(`${e}#1`) === 1)).toBe(true);
    expect(await statusCounts(schema.sql)).toEqual({ '2': 20_000 });
  }, 180_000);

  it('a handler hanging past the lease: another worker takes over, and the late completions write nothing (lostRace)', async () => {
    const events = await seedDueTasks(schema.sql, 1_000, { prefix: 'hang' });
    const hung = new Set(events.filter((_e, i) => i % 100 === 7)); // 10 tasks
    // The first delivery of each hung task is held until the takeover is over, however slow the machine.
    let releaseHung: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (releaseHung = resolve));
    // The recovering worker's own deliveries are held too, so the late answers land while its claims are live:
    // only the fence (not the status guard) can then tell the late worker it lost.
    let holdSecond = false;
    let releaseSecond: () => void = () => undefined;
    const heldSecond = new Promise<void>((resolve) => (releaseSecond = resolve));
    handler.setBehaviour((d) => {
      if (!hung.has(d.eventId ?? '')) return undefined;
      if (d.attempt === 1) return { until: held };
      return holdSecond ? { until: heldSecond } : undefined;
    });
    const flags = ['redrive', '--pause', '0ms', '--batch', '50', '--lease', '3s', '--stuck-after', '1s'];
    // The first workers beat no heartbeat (as a process paused or cut off from the database would not), so
    // their leases expire while their handlers hang; a live worker's heartbeat would keep the claim its own.
    const first = [1, 2].map(() =>
      runJson<RedriveJson>([...flags, '--no-heartbeat'], { cwd, timeoutMs: 150_000 }),
    );
    // Once every hung task is in its handler and its lease has expired, a third worker recovers them.
    await waitFor(
      () => [...hung].every((e) => handler.byAttempt.has(`${e}#1`)),
      90_000,
      'the hung deliveries',
    );
    await new Promise((r) => setTimeout(r, 3_500));
    // Hung claims still processing now: a first worker that started late (a loaded machine) may already
    // have taken some of them over in its own stuck pass; the totals below hold either way.
    const [hungRows] = await schema.sql.query('SELECT event_id FROM async_task WHERE status = 1');
    const stillHung = (hungRows as Array<{ event_id: string }>).map((r) => r.event_id);
    expect(stillHung.every((e) => hung.has(e))).toBe(true);
    holdSecond = true;
    const recovering = runJson<RedriveJson>(flags, { cwd, timeoutMs: 150_000 });
    await waitFor(
      () => stillHung.every((e) => handler.byAttempt.has(`${e}#2`)),
      90_000,
      'the takeover deliveries',
    );
    // Now the first workers' handlers answer, long after their leases were taken over, while the takeover is in flight.
    releaseHung();
    const late = await Promise.race([
      Promise.all(first),
      new Promise<never>((_r, reject) =>
        setTimeout(() => reject(new Error('first workers did not finish')), 90_000),
      ),
    ]);
    releaseSecond();
    const recovery = await recovering;
    expect(recovery.code, recovery.stderr).toBe(0);
    expect(recovery.json.recoveredStuck).toBe(stillHung.length);
    for (const run of late) expect(run.code, run.stderr).toBe(0);
    const all = [...late.map((r) => r.json), recovery.json];
    // The late workers lost (their writes named a fence that was no longer there); the taker's outcomes stood.
    expect(sum(all, 'lostRace')).toBe(hung.size);
    expect(recovery.json.lostRace).toBe(0);
    expect(sum(all, 'succeeded')).toBe(1_000);
    expect(sum(all, 'claimed')).toBe(1_000 + hung.size);
    expect(sum(all, 'recoveredStuck')).toBe(hung.size);
    // Exactly once per attempt: the hung ones twice (attempts 1 and 2), the rest once.
    expect(handler.stats().duplicateDeliveriesPerAttempt).toBe(0);
    for (const e of events) expect(handler.deliveries.get(e), e).toBe(hung.has(e) ? 2 : 1);
    for (const e of hung) expect(handler.byAttempt.get(`${e}#2`)).toBe(1);
    expect(await statusCounts(schema.sql)).toEqual({ '2': 1_000 });
    // The recovered tasks count the abandoned attempt.
    const [rows] = await schema.sql.query('SELECT event_id FROM async_task WHERE retry_count > 0');
    expect((rows as Array<{ event_id: string }>).map((r) => r.event_id).sort()).toEqual([...hung].sort());
  }, 180_000);
});
