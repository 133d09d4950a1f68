import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RetryPolicies } from '../../src/core/backoff.js';
import { ManualClock } from '../../src/core/clock.js';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { asyncTaskDdl } from '../../src/db/ddl.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { openSqlite } from '../../src/db/engines/sqlite/db.js';
import type { Db } from '../../src/db/types.js';
import { registryOf } from '../../src/dispatch/registry.js';
import type { Dispatcher } from '../../src/dispatch/types.js';
import type { ClaimedTask } from '../../src/db/sql/claims.js';
import { Heartbeat } from '../../src/ops/redrive/heartbeat.js';
import { runRedrive } from '../../src/ops/redrive/redrive.js';

/**
 * redrive's local clock (pacing, and the lease check before a queued task is dispatched) driven
 * by hand: what took real seconds of sleeping takes none, and the database still decides leases.
 */
let dir: string;
let db: Db;
let source: BoundSource;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-redrive-clock-'));
  db = openSqlite({ kind: 'sqlite', file: join(dir, 'tasks.sqlite') }, { create: true });
  for (const statement of asyncTaskDdl(db.dialect)) await db.execute(statement);
  for (let i = 1; i <= 3; i++)
    await db.execute(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time) VALUES ('coupon', ?, ?, 0, datetime('now', '-1 minute'))`,
      [`B${i}`, `evt-${i}`],
    );
  source = await bindSource(db, asyncTask, 'async-task');
});

afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A handler that succeeds and, while it runs, moves the clock on by `advanceMs`. */
function advancing(clock: ManualClock, advanceMs: number): Dispatcher & { calls: number } {
  const dispatcher = {
    kind: 'clock-test',
    calls: 0,
    async dispatch() {
      dispatcher.calls++;
      clock.advance(advanceMs);
      return { outcome: 'success' as const };
    },
  };
  return dispatcher;
}

function options(
  clock: ManualClock,
  dispatcher: Dispatcher,
  extra: { pauseMs?: number; batch?: number } = {},
) {
  return {
    batch: extra.batch ?? 10,
    pauseMs: extra.pauseMs ?? 0,
    concurrency: 1,
    leaseSeconds: 60,
    stuckAfterMs: 600_000,
    dryRun: false,
    dispatchers: registryOf({ default: dispatcher }),
    policies: RetryPolicies.fromConfig(undefined),
    heartbeat: false,
    clock,
  };
}

describe('redrive on an injected local clock', () => {
  it('hands back queued tasks whose lease ran out while they waited, without waiting a lease', async () => {
    const clock = new ManualClock();
    const handler = advancing(clock, 61_000); // the first task's handler outlasts the 60 s lease
    const started = Date.now();
    const result = await runRedrive(source, options(clock, handler));
    expect(handler.calls).toBe(1);
    expect(result).toMatchObject({ claimed: 3, succeeded: 1, released: 2 });
    expect(result.durationMs).toBeGreaterThanOrEqual(61_000); // the clock's time, not the wall's
    expect(Date.now() - started).toBeLessThan(10_000);
    const pending = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM async_task WHERE status = 0');
    expect(pending[0]?.n).toBe(2); // released: back to pending, no attempt counted
  });

  it('dispatches every task when the clock stays within the lease (the check can pass)', async () => {
    const clock = new ManualClock();
    const handler = advancing(clock, 1_000);
    const result = await runRedrive(source, options(clock, handler));
    expect(handler.calls).toBe(3);
    expect(result).toMatchObject({ claimed: 3, succeeded: 3, released: 0 });
  });

  it('paces claims by the clock: 10-minute pauses between claims pass as the clock is moved', async () => {
    const clock = new ManualClock();
    const handler = advancing(clock, 0);
    const tick = setInterval(() => clock.advance(60_000), 1); // a minute of clock per real millisecond
    const started = Date.now();
    try {
      const result = await runRedrive(source, {
        ...options(clock, handler, { batch: 1, pauseMs: 10 * 60_000 }),
        leaseSeconds: 3600,
      });
      expect(result).toMatchObject({ claimed: 3, succeeded: 3 });
      // Four claims at least (stuck, then three due pages), each 10 minutes of clock after the last.
      expect(result.durationMs).toBeGreaterThanOrEqual(30 * 60_000);
    } finally {
      clearInterval(tick);
    }
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

/** Task 1 claimed with a lease that ends a second from now (database clock), as redrive's claim leaves it. */
async function claimTaskOne(): Promise<ClaimedTask> {
  const [row] = await db.query<{ until: number }>(
    `SELECT CAST(strftime('%s', 'now') AS INTEGER) + 1 AS until`,
  );
  const until = Number(row?.until);
  await db.execute(
    `UPDATE async_task SET status = 1, retry_count = 0, next_retry_time = datetime(?, 'unixepoch') WHERE id = 1`,
    [until],
  );
  return {
    id: 1,
    bizType: 'coupon',
    bizId: 'B1',
    eventId: 'evt-1',
    payloadText: null,
    payloadValue: null,
    attempts: 0,
    rowMaxAttempts: null,
    recovered: false,
    fence: { leaseUntilEpoch: until, attempts: 0 },
  };
}

const leaseOfTaskOne = async () =>
  Number(
    (
      await db.query<{ e: number }>(
        `SELECT strftime('%s', next_retry_time) AS e FROM async_task WHERE id = 1`,
      )
    )[0]?.e,
  );

/** Lets the heartbeat's pending database work run (real I/O, no clock time). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** A handler that runs until `finish()`, with task 1's lease kept by a heartbeat on a ManualClock. */
async function heartbeatAroundTaskOne(enabled = true) {
  const clock = new ManualClock();
  const task = await claimTaskOne();
  const claimedUntil = task.fence.leaseUntilEpoch;
  let finish!: () => void;
  const running = new Heartbeat(source, 60, enabled, clock).around(
    task,
    () => new Promise<void>((resolve) => (finish = resolve)),
  );
  const stop = async () => {
    finish();
    await running;
  };
  return { clock, task, claimedUntil, stop };
}

describe('the lease heartbeat on an injected local clock', () => {
  it('extends the lease through the fenced row each third of the lease, with no real waiting', async () => {
    const { clock, task, claimedUntil, stop } = await heartbeatAroundTaskOne();
    await settle();
    expect(await leaseOfTaskOne()).toBe(claimedUntil); // no beat before a third of the lease
    clock.advance(20_000);
    await settle();
    const extended = await leaseOfTaskOne();
    expect(extended).toBeGreaterThanOrEqual(claimedUntil + 58); // the database's now + 60 s
    expect(task.fence.leaseUntilEpoch).toBe(extended); // the outcome will name the new fence
    await stop();
  });

  it('stops beating once the fence is lost, and writes nothing more', async () => {
    const { clock, task, claimedUntil, stop } = await heartbeatAroundTaskOne();
    // Another worker took the task over: its claim wrote another lease expiry.
    await db.execute(`UPDATE async_task SET next_retry_time = datetime('now', '+7 minutes') WHERE id = 1`);
    clock.advance(20_000);
    await settle(); // this beat finds the fence gone
    expect(task.fence.leaseUntilEpoch).toBe(claimedUntil);
    // Were it still beating, the next beat would extend a row that carries the old fence again.
    await db.execute(`UPDATE async_task SET next_retry_time = datetime(?, 'unixepoch') WHERE id = 1`, [
      claimedUntil,
    ]);
    clock.advance(20_000);
    await settle();
    expect(await leaseOfTaskOne()).toBe(claimedUntil);
    await stop();
  });

  it('beats on nothing when switched off (--no-heartbeat)', async () => {
    const { clock, claimedUntil, stop } = await heartbeatAroundTaskOne(false);
    clock.advance(20_000);
    await settle();
    expect(await leaseOfTaskOne()).toBe(claimedUntil);
    await stop();
  });
});
