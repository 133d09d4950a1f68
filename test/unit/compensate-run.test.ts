import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import type { TaskId } from '../../src/core/task.js';
import { Run } from '../../src/ops/compensation/run.js';
import type { CompensateRequest } from '../../src/ops/compensation/types.js';
import { FakeStore, fakeSource, settled } from '../support/fake-store.js';

// Nothing here waits on real time: a test that hangs is a failure, found fast.
vi.setConfig({ testTimeout: 5000 });

function setup(request: Partial<CompensateRequest> = {}) {
  const clock = new ManualClock();
  const store = new FakeStore(clock);
  const applied: TaskId[][] = [];
  const run = new Run(
    fakeSource(),
    {
      action: 'mark-compensated',
      operator: 'alice',
      host: 'ops-1',
      reason: 'refunded by hand',
      dryRun: false,
      runId: 'run-1',
      filter: {},
      limit: 0,
      onApplied: (ids) => applied.push(ids),
      ...request,
    },
    store.nowEpoch,
    store.compensateStore(),
    clock,
  );
  return { clock, store, run, applied };
}

describe("compensate's batch (on a fake store)", () => {
  it('locks, re-checks, writes and audits the movers in one transaction; the rest are reported, not written', async () => {
    const { store, run, applied } = setup();
    store.add({ id: 1, status: 'failed' }, { id: 2, status: 'compensated' }, { id: 3, status: 'pending' });
    store.add({ id: 4, status: 'failed' });
    await run.batch([4, 1, 2, 3], 'ids');
    expect(store.calls).toEqual([
      'select for update:4,1,2,3',
      'transition:mark-compensated:4,1',
      'audit:4,1',
      'commit',
    ]);
    expect(store.row(1).status).toBe('compensated');
    expect(store.row(3).status).toBe('pending');
    expect(store.audit).toHaveLength(2);
    const [audit4] = store.audit;
    expect(audit4).toMatchObject({
      operator: 'alice',
      host: 'ops-1',
      action: 'mark-compensated',
      source: 'tasks',
      taskTable: 'async_task',
      taskId: '4',
      eventId: 'evt-4',
      fromStatus: 'failed',
      toStatus: 'compensated',
      reason: 'refunded by hand',
      runId: 'run-1',
    });
    expect(JSON.parse(audit4!.beforeJson!)).toMatchObject({ id: 4, status: 3 });
    expect(JSON.parse(audit4!.afterJson!)).toMatchObject({ id: 4, status: 4, payload: '{}' });
    const result = run.finish();
    // In the order asked for, whatever order the batch came to them in.
    expect(result.results.map((r) => [r.id, r.outcome])).toEqual([
      [4, 'applied'],
      [1, 'applied'],
      [2, 'already'],
      [3, 'refused'],
    ]);
    expect(result).toMatchObject({ applied: 2, skipped: 2, refused: 1 });
    expect(applied).toEqual([[4, 1]]);
  });

  it('in a dry run reads and decides, and writes nothing', async () => {
    const { store, run, applied } = setup({ dryRun: true });
    store.add({ id: 1, status: 'failed' }, { id: 2, status: 'pending' });
    await run.batch([1, 2], 'ids');
    expect(store.calls).toEqual(['select:1,2']);
    expect(store.writes()).toEqual([]);
    expect(store.audit).toEqual([]);
    expect(store.row(1).status).toBe('failed');
    expect(run.finish().results.map((r) => r.outcome)).toEqual(['would-apply', 'refused']);
    expect(applied).toEqual([]);
  });

  it('counts a vanished row, and a filtered row moved meanwhile, as lost races', async () => {
    const { store, run } = setup();
    store.add({ id: 1, status: 'failed' }, { id: 2, status: 'compensated' });
    await run.batch([1, 2, 99], 'filter');
    const result = run.finish();
    expect(result.results.map((r) => [r.id, r.outcome])).toEqual([
      [1, 'applied'],
      [2, 'lost-race'],
      [99, 'lost-race'],
    ]);
    expect(store.audit.map((a) => a.taskId)).toEqual(['1']);
  });

  it('rolls the whole batch back, audit rows included, when the guarded write changes fewer rows than it locked', async () => {
    const { store, run } = setup();
    store.add({ id: 1, status: 'failed' }, { id: 2, status: 'failed' });
    // A writer that ignores the row locks moves task 2 between the read and the write.
    store.afterSelect = () => {
      store.row(2).status = 'pending';
    };
    await expect(run.batch([1, 2], 'ids')).rejects.toMatchObject({ code: 'GUARD' });
    expect(store.calls.at(-1)).toBe('rollback');
    expect(store.row(1).status).toBe('failed');
    expect(store.audit).toEqual([]);
    expect(run.finish().applied).toBe(0);
  });

  it('forget deletes the failed rows and keeps each whole in its audit row', async () => {
    const { store, run } = setup({ action: 'forget' });
    store.add({ id: 1, status: 'failed', lastError: 'boom' }, { id: 2, status: 'success' });
    await run.batch([1, 2], 'ids');
    expect(store.calls).toEqual(['select for update:1,2', 'delete:1', 'audit:1', 'commit']);
    expect(store.rows.has(1)).toBe(false);
    expect(store.rows.has(2)).toBe(true);
    const [audit] = store.audit;
    expect(audit).toMatchObject({ taskId: '1', fromStatus: 'failed', toStatus: 'deleted', afterJson: null });
    expect(JSON.parse(audit!.beforeJson!)).toMatchObject({ id: 1, last_error: 'boom' });
  });

  it('paces to the rate on the clock, cumulatively, and times the run by it', async () => {
    const { clock, store, run } = setup({ rate: 10, dryRun: true });
    store.add(...[1, 2, 3, 4, 5].map((id) => ({ id, status: 'failed' as const })));
    await run.batch([1, 2, 3, 4, 5], 'ids');
    clock.advance(100); // the batch took 100 ms: 5 rows at 10/s are due at 500 ms
    let paced = false;
    const pace = run.pace().then(() => {
      paced = true;
    });
    await settled();
    clock.advance(399);
    await settled();
    expect(paced).toBe(false);
    clock.advance(1);
    await pace;
    expect(paced).toBe(true);
    clock.advance(234);
    expect(run.finish().durationMs).toBe(734);
  });
});
