import { describe, expect, it, vi } from 'vitest';
import { RetryPolicies } from '../../src/core/backoff.js';
import { ManualClock } from '../../src/core/clock.js';
import { Settler, SETTLE_BATCH, SETTLE_MAX_WAIT_MS } from '../../src/ops/redrive/settle.js';
import { zeroCounts, type RedriveEvent } from '../../src/ops/redrive/types.js';
import { FakeStore, fakeSource, settled } from '../support/fake-store.js';

// Nothing here waits on real time: a test that hangs is a failure, found fast.
vi.setConfig({ testTimeout: 5000 });

function setup() {
  const clock = new ManualClock();
  const store = new FakeStore(clock);
  const counts = zeroCounts();
  const events: RedriveEvent[] = [];
  const settler = new Settler(
    fakeSource(),
    store,
    new RetryPolicies(new Map()),
    counts,
    (event) => events.push(event),
    () => 0.5,
    clock,
  );
  return { clock, store, settler, counts, events };
}

/** Rows claimed by this run: processing under one lease. */
function claimedRows(store: FakeStore, ...ids: number[]): void {
  for (const id of ids)
    store.add({ id, status: 'processing', attempts: 1, nextRetryEpoch: store.nowEpoch + 300 });
}

describe('the settler of a redrive (on a fake store)', () => {
  it('writes a flush in one transaction: successes grouped under their fence, retries and failures guarded one by one', async () => {
    const { store, settler, counts, events } = setup();
    claimedRows(store, 1, 2, 3, 4);
    await settler.add({ task: store.claimed(1), result: { outcome: 'success' } });
    await settler.add({ task: store.claimed(2), result: { outcome: 'success' } });
    await settler.add({ task: store.claimed(3), result: { outcome: 'retryable', error: 'HTTP 503' } });
    await settler.add({ task: store.claimed(4), result: { outcome: 'permanent', error: 'bad payload' } });
    expect(store.calls).toEqual([]); // queued, not written
    await settler.flush();
    expect(store.calls).toEqual([
      'transition:retry:3',
      'transition:fail:4',
      'transition:succeed:1,2',
      'commit',
    ]);
    expect(store.row(1).status).toBe('success');
    expect(store.row(2).status).toBe('success');
    expect(store.row(3)).toMatchObject({ status: 'pending', attempts: 2, lastError: 'HTTP 503' });
    expect(store.row(3).nextRetryEpoch).toBeGreaterThan(store.nowEpoch);
    expect(store.row(4)).toMatchObject({ status: 'failed', lastError: 'bad payload' });
    expect(counts).toMatchObject({ succeeded: 2, retried: 1, failed: 1, lostRace: 0 });
    expect(events.map((e) => e.event)).toEqual(['task_success', 'task_success', 'task_retry', 'task_failed']);
    await settler.close();
  });

  it('flushes by itself when a batch is full', async () => {
    const { store, settler, counts } = setup();
    const ids = Array.from({ length: SETTLE_BATCH }, (_, i) => i + 1);
    claimedRows(store, ...ids);
    for (const id of ids.slice(0, -1))
      await settler.add({ task: store.claimed(id), result: { outcome: 'success' } });
    expect(store.calls).toEqual([]);
    await settler.add({ task: store.claimed(SETTLE_BATCH), result: { outcome: 'success' } });
    expect(store.calls.filter((c) => c === 'commit')).toHaveLength(1);
    expect(counts.succeeded).toBe(SETTLE_BATCH);
    await settler.close();
  });

  it('writes a lone outcome once it has waited SETTLE_MAX_WAIT_MS on the clock, not before', async () => {
    const { clock, store, settler, counts } = setup();
    claimedRows(store, 1);
    await settler.add({ task: store.claimed(1), result: { outcome: 'success' } });
    const step = SETTLE_MAX_WAIT_MS / 4;
    for (let waited = step; waited < SETTLE_MAX_WAIT_MS; waited += step) {
      clock.advance(step);
      await settled();
    }
    expect(store.calls).toEqual([]);
    clock.advance(step);
    await settled();
    expect(store.calls).toEqual(['transition:succeed:1', 'commit']);
    expect(counts.succeeded).toBe(1);
    await settler.close();
  });

  it('counts an outcome whose claim was taken over as a lost race and writes nothing for it', async () => {
    const { store, settler, counts, events } = setup();
    claimedRows(store, 1);
    const task = store.claimed(1);
    store.takeOver(1);
    const taken = { ...store.row(1) };
    await settler.add({ task, result: { outcome: 'retryable', error: 'timeout' } });
    await settler.close();
    expect(store.row(1)).toEqual(taken);
    expect(counts).toMatchObject({ retried: 0, lostRace: 1 });
    expect(events).toEqual([expect.objectContaining({ event: 'task_lost_race', taskId: 1, attempt: 2 })]);
  });

  it('rolls back a grouped success that missed a row and writes the flush again row by row', async () => {
    const { store, settler, counts, events } = setup();
    claimedRows(store, 1, 2);
    const [one, two] = [store.claimed(1), store.claimed(2)];
    store.takeOver(2);
    await settler.add({ task: one, result: { outcome: 'success' } });
    await settler.add({ task: two, result: { outcome: 'success' } });
    await settler.close();
    expect(store.calls).toEqual([
      'transition:succeed:1,2',
      'rollback',
      'held:1,2',
      'transition:succeed:1',
      'commit',
    ]);
    expect(store.row(1).status).toBe('success');
    expect(store.row(2).status).toBe('processing');
    expect(counts).toMatchObject({ succeeded: 1, lostRace: 1 });
    // The rolled-back pass logged nothing.
    expect(events.map((e) => [e.event, e.taskId])).toEqual([
      ['task_success', 1],
      ['task_lost_race', 2],
    ]);
  });

  it('hands a release back to pending without counting an attempt', async () => {
    const { store, settler, counts } = setup();
    claimedRows(store, 1);
    await settler.add({ task: store.claimed(1), release: 'stopped before dispatch' });
    await settler.close();
    expect(store.row(1)).toMatchObject({ status: 'pending', attempts: 1, nextRetryEpoch: store.nowEpoch });
    expect(counts.released).toBe(1);
  });

  it('keeps a database failure: the flush rolls back, counts nothing, and the next add throws it', async () => {
    const { store, settler, counts, events } = setup();
    claimedRows(store, 1, 2);
    store.writeFailure = new Error('connection lost');
    await settler.add({ task: store.claimed(1), result: { outcome: 'retryable' } });
    await expect(settler.flush()).rejects.toThrow('connection lost');
    expect(store.calls).toEqual(['transition:retry:1', 'rollback']);
    expect(store.row(1).status).toBe('processing');
    store.writeFailure = undefined;
    await expect(settler.add({ task: store.claimed(2), result: { outcome: 'success' } })).rejects.toThrow(
      'connection lost',
    );
    expect(counts).toMatchObject({ retried: 0, succeeded: 0 });
    expect(events).toEqual([]);
    settler.abandon();
  });
});
