import { systemClock, type LocalClock } from '../../core/clock.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, type ClaimedTask } from '../../db/port/index.js';

/**
 * A beat every third of the lease: two beats may fail (a slow statement, a brief network hiccup)
 * before the lease runs out, and the table takes one short UPDATE per running task per beat.
 */
export const BEATS_PER_LEASE = 3;

/**
 * Keeps the claims of running handlers alive: while a task's handler runs, its lease is extended
 * through the fenced row before it expires, so a handler slower than the lease is not taken over
 * and run a second time. Each beat writes a later expiry, which becomes the task's fence: the
 * outcome written afterwards names it. A beat that finds the fence gone (the claim was taken over,
 * or the task moved on) stops beating; the outcome then finds no row carrying its fence and writes
 * nothing (a lost race).
 *
 * The beats are paced by the local clock (a test moves a ManualClock instead of waiting a third of
 * a lease); the new expiry always comes from the database's clock.
 */
export class Heartbeat {
  constructor(
    private readonly source: BoundSource,
    private readonly leaseSeconds: number,
    /** Off only as a diagnostic switch (`--no-heartbeat`): a handler slower than the lease may then run twice. */
    private readonly enabled = true,
    private readonly clock: LocalClock = systemClock,
  ) {}

  /** Runs `work` (the handler) with the task's lease kept alive; the fence is final once it resolves. */
  async around<T>(task: ClaimedTask, work: () => Promise<T>): Promise<T> {
    if (!this.enabled) return work();
    const state = { lost: false };
    let beating: Promise<void> = Promise.resolve();
    const timer = this.clock.every((this.leaseSeconds * 1000) / BEATS_PER_LEASE, () => {
      beating = beating.then(() => this.beat(task, state));
    });
    try {
      return await work();
    } finally {
      timer.stop();
      await beating;
    }
  }

  /** One beat: extends the lease when the database's clock has moved past the fence; a lost fence ends the beats. */
  private async beat(task: ClaimedTask, state: { lost: boolean }): Promise<void> {
    if (state.lost) return;
    try {
      const next = (await this.source.db.nowEpoch()) + this.leaseSeconds;
      if (next <= task.fence.leaseUntilEpoch) return;
      if (await store.tasks.extendLease(this.source, task.id, task.fence, next))
        task.fence = { ...task.fence, leaseUntilEpoch: next };
      else state.lost = true;
    } catch {
      // A failed beat is retried at the next one; the lease still has two beats' worth left.
    }
  }
}
