import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { Feeder, type FeedOptions, type QueuedTask } from '../../src/ops/redrive/feed.js';
import { zeroCounts, type RedriveEvent } from '../../src/ops/redrive/types.js';
import { FakeStore, fakeSource, settled } from '../support/fake-store.js';

// Nothing here waits on real time: a test that hangs is a failure, found fast.
vi.setConfig({ testTimeout: 5000 });

const counts = zeroCounts;

function setup(options: Partial<FeedOptions> = {}) {
  const clock = new ManualClock();
  const store = new FakeStore(clock);
  const tally = counts();
  const events: RedriveEvent[] = [];
  const feeder = new Feeder(
    fakeSource(),
    store,
    {
      batch: 2,
      pauseMs: 1000,
      leaseSeconds: 300,
      cutoffEpoch: store.nowEpoch,
      stuckCutoffEpoch: store.nowEpoch,
      skipLocked: true,
      stopped: () => false,
      clock,
      ...options,
    },
    tally,
    (event) => events.push(event),
  );
  return { clock, store, feeder, tally, events };
}

/** Takes every task the feeder hands out, advancing the clock whenever it waits. */
async function takeAll(feeder: Feeder, clock: ManualClock, stepMs: number): Promise<QueuedTask[]> {
  const out: QueuedTask[] = [];
  for (;;) {
    let done = false;
    const next = feeder.next().finally(() => {
      done = true;
    });
    await settled();
    while (!done) {
      clock.advance(stepMs);
      await settled();
    }
    const task = await next;
    if (!task) return out;
    out.push(task);
  }
}

describe('the feeder of a redrive (on a fake store)', () => {
  it('claims stuck rows first, then due rows, one page at a time, each claim paced by pauseMs', async () => {
    const { clock, store, feeder, tally, events } = setup();
    const start = clock.nowMs();
    store.add(
      { id: 1, status: 'pending' },
      { id: 2, status: 'pending' },
      { id: 3, status: 'pending' },
      { id: 10, status: 'processing', nextRetryEpoch: store.nowEpoch - 5, attempts: 1 },
      { id: 11, status: 'processing', nextRetryEpoch: store.nowEpoch - 5, attempts: 2 },
    );
    const tasks = await takeAll(feeder, clock, 250);
    expect(tasks.map((t) => t.task.id)).toEqual([10, 11, 1, 2, 3]);
    // A full stuck page, an empty one (the end of stuck), a full due page, a short one (the end).
    expect(store.calls).toEqual(['claim:stuck', 'claim:stuck', 'claim:due', 'claim:due']);
    expect(store.claimedAtMs.map((t) => t - start)).toEqual([0, 1000, 2000, 3000]);
    expect(tally).toMatchObject({ claimed: 5, recoveredStuck: 2 });
    expect(events).toEqual([
      { event: 'batch_claimed', kind: 'stuck', count: 2 },
      { event: 'batch_claimed', kind: 'due', count: 2 },
      { event: 'batch_claimed', kind: 'due', count: 1 },
    ]);
  });

  it('does not claim again before pauseMs has passed on the clock', async () => {
    const { clock, store, feeder } = setup({ batch: 1 });
    store.add({ id: 1, status: 'pending' }, { id: 2, status: 'pending' });
    // The stuck page comes back empty at once; the due claim waits out the pause.
    const first = feeder.next();
    await settled();
    expect(store.calls).toEqual(['claim:stuck']);
    clock.advance(1000);
    expect((await first)?.task.id).toBe(1);
    const next = feeder.next();
    await settled();
    clock.advance(999);
    await settled();
    expect(store.calls).toEqual(['claim:stuck', 'claim:due']);
    clock.advance(1);
    expect((await next)?.task.id).toBe(2);
    expect(store.calls).toEqual(['claim:stuck', 'claim:due', 'claim:due']);
  });

  it('hands out each task with the fence its claim wrote, and when it was claimed', async () => {
    const { clock, store, feeder } = setup();
    store.add({ id: 1, status: 'pending', attempts: 3 }, { id: 9, status: 'processing', attempts: 1 });
    const [stuck, due] = await takeAll(feeder, clock, 500);
    const lease = store.nowEpoch + 300;
    // A takeover counts one more attempt; a due claim does not.
    expect(stuck!.task).toMatchObject({
      id: 9,
      recovered: true,
      fence: { leaseUntilEpoch: lease, attempts: 2 },
    });
    expect(due!.task).toMatchObject({
      id: 1,
      recovered: false,
      fence: { leaseUntilEpoch: lease, attempts: 3 },
    });
    expect(store.row(1)).toMatchObject({ status: 'processing', nextRetryEpoch: lease });
    expect(due!.claimedAtMs).toBe(store.claimedAtMs.at(-1));
  });

  it('asks for no more than maxTasks in all, and pages from the cursor of the last claim', async () => {
    const { clock, store, feeder, tally } = setup({ maxTasks: 3 });
    store.add(...[1, 2, 3, 4, 5].map((id) => ({ id, status: 'pending' as const })));
    const tasks = await takeAll(feeder, clock, 1000);
    expect(tasks.map((t) => t.task.id)).toEqual([1, 2, 3]);
    const due = store.claimRequests.filter((r) => r.kind === 'due');
    expect(due.map((r) => r.limit)).toEqual([2, 1]);
    expect(due[1]!.cursor).toEqual({ nextRetryEpoch: store.nowEpoch - 60, id: 2 });
    expect(tally.claimed).toBe(3);
    expect(store.row(4).status).toBe('pending');
  });

  it('retries a claim that met a lock conflict after a wait on the clock; other errors stop it at once', async () => {
    const { clock, store, feeder } = setup();
    store.add({ id: 1, status: 'pending' });
    store.claimFailures.push(Object.assign(new Error('deadlock'), { code: 'ER_LOCK_DEADLOCK' }));
    const next = feeder.next();
    await settled();
    expect(store.calls).toEqual(['claim:stuck']);
    clock.advance(20);
    await settled();
    expect(store.calls).toEqual(['claim:stuck', 'claim:stuck']);
    clock.advance(1000);
    expect((await next)?.task.id).toBe(1);

    const other = setup();
    other.store.add({ id: 1, status: 'pending' });
    other.store.claimFailures.push(Object.assign(new Error('gone away'), { code: 'ER_SERVER_GONE' }));
    await expect(other.feeder.next()).rejects.toThrow('gone away');
    expect(other.store.calls).toEqual(['claim:stuck']);
  });

  it('claims nothing once the run is stopped', async () => {
    const { store, feeder } = setup({ stopped: () => true });
    store.add({ id: 1, status: 'pending' });
    expect(await feeder.next()).toBeUndefined();
    expect(store.calls).toEqual([]);
  });
});
