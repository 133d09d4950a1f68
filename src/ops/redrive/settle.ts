import { decide } from '../../core/retry-decision.js';
import type { RetryPolicies } from '../../core/backoff.js';
import { systemClock, type LocalClock } from '../../core/clock.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import {
  type ClaimedTask,
  type SettleStore,
  truncateError,
  lastErrorLimit,
  type ClaimFence,
} from '../../db/port/index.js';
import type { DispatchResult } from '../../dispatch/types.js';
import type { RedriveCounts, RedriveEvent } from './types.js';

/** What one claimed task came to: a dispatch result, or handed back unattempted. */
export type Settlement =
  { task: ClaimedTask; result: DispatchResult } | { task: ClaimedTask; release: string };

/** Outcomes are written in batches of at most this many rows per transaction… */
export const SETTLE_BATCH = 500;
/** …and none waits longer than this for its batch, so a slow task never holds the others' outcomes past their lease. */
export const SETTLE_MAX_WAIT_MS = 200;

/**
 * Writes outcomes through the state machine, in short transactions: first it reads which of the
 * batch's rows still carry their claim (locking them), then writes only those — grouped successes in
 * one UPDATE per fence, retries and failures one guarded UPDATE each. A row whose claim was taken
 * over is counted `lostRace` and left alone. Flushes run one at a time; an error is kept and thrown
 * to whoever adds or flushes next, so the run stops on the first database failure.
 */
export class Settler {
  private buffer: Settlement[] = [];
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown;
  private readonly timer: { stop(): void };
  private oldest = 0;

  constructor(
    private readonly source: BoundSource,
    private readonly store: SettleStore,
    private readonly policies: RetryPolicies,
    private readonly counts: RedriveCounts,
    private readonly log: (event: RedriveEvent) => void,
    private readonly random: () => number = Math.random,
    private readonly clock: LocalClock = systemClock,
  ) {
    this.timer = this.clock.every(
      SETTLE_MAX_WAIT_MS / 4,
      () => {
        if (this.buffer.length > 0 && this.clock.nowMs() - this.oldest >= SETTLE_MAX_WAIT_MS)
          void this.flush().catch(() => undefined);
      },
      { unref: true },
    );
  }

  /** Queues one outcome; flushes when the batch is full. Throws a failure of an earlier flush. */
  async add(settlement: Settlement): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.buffer.length === 0) this.oldest = this.clock.nowMs();
    this.buffer.push(settlement);
    if (this.buffer.length >= SETTLE_BATCH) await this.flush();
  }

  /** Writes everything queued so far; resolves once written (or rejects with the failure). */
  flush(): Promise<void> {
    const items = this.buffer;
    this.buffer = [];
    const run = this.chain.then(async () => {
      if (this.failure) throw this.failure;
      if (items.length === 0) return;
      try {
        await this.write(items);
      } catch (error) {
        this.failure ??= error;
        throw error;
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Stops the timer after a last flush. */
  async close(): Promise<void> {
    this.timer.stop();
    await this.flush();
  }

  /** Stops the timer without writing (the run is failing). */
  abandon(): void {
    this.timer.stop();
    this.buffer = [];
  }

  /**
   * Optimistic first: write every outcome under its fence and count a row that takes no write as a
   * lost race. Grouped successes cannot tell which row missed, so when a group changes fewer rows
   * than it names, the whole flush is rolled back and written again row by row: read and lock
   * the rows still held first (heldClaims), then write only those.
   */
  private async write(items: Settlement[]): Promise<void> {
    try {
      await this.writeOnce(items, false);
    } catch (error) {
      if (!(error instanceof GroupMissed)) throw error;
      await this.writeOnce(items, true);
    }
  }

  private async writeOnce(items: Settlement[], rowByRow: boolean): Promise<void> {
    const { source, store } = this;
    const limit = lastErrorLimit(source);
    const events: RedriveEvent[] = [];
    // Counted only once the transaction commits: a rolled-back flush counts and logs nothing.
    const tally = await store.transaction(source, async (tx) => {
      const held = rowByRow
        ? await store.heldClaims(
            tx,
            source,
            items.map((s) => s.task),
          )
        : undefined;
      const nowEpoch = held ? held.nowEpoch : await store.txNow(tx, source);
      const successes = new Map<string, { fence: ClaimFence; ids: TaskId[] }>();
      const tally = { succeeded: 0, delivered: 0, retried: 0, failed: 0, released: 0, lostRace: 0 };
      for (const item of items) {
        const { task } = item;
        const base = {
          taskId: task.id,
          eventId: task.eventId,
          bizType: task.bizType,
          attempt: task.attempts + 1,
        };
        const lost = () => {
          tally.lostRace++;
          events.push({
            event: 'task_lost_race',
            ...base,
            detail: 'the claim was taken over after its lease expired; nothing written',
          });
        };
        if (held && !held.ids.has(String(task.id))) {
          lost();
          continue;
        }
        if ('release' in item) {
          const written = await this.written(
            rowByRow,
            store.applyTransition(tx, source, {
              transition: 'release',
              id: task.id,
              fence: task.fence,
              nextRetryAt: 'now',
            }),
          );
          if (!written) {
            lost();
            continue;
          }
          tally.released++;
          events.push({ event: 'task_released', ...base, detail: item.release });
          continue;
        }
        const decision = decide({
          result: item.result,
          attemptsBefore: task.attempts,
          policy: this.policies.for(task.bizType),
          rowMaxAttempts: task.rowMaxAttempts,
          nowEpoch,
          random: this.random,
        });
        if (decision.transition === 'hold') {
          // Delivered to a queue: the row stays processing; its consumer writes the outcome within the lease.
          tally.delivered++;
          events.push({ event: 'task_delivered', ...base });
        } else if (decision.transition === 'succeed') {
          const key = `${task.fence.leaseUntilEpoch}:${task.fence.attempts}`;
          const group = successes.get(key) ?? { fence: task.fence, ids: [] };
          group.ids.push(task.id);
          successes.set(key, group);
          events.push({ event: 'task_success', ...base });
        } else if (decision.transition === 'retry') {
          const written = await this.written(
            rowByRow,
            store.applyTransition(tx, source, {
              transition: 'retry',
              id: task.id,
              fence: task.fence,
              attempts: decision.attempts,
              nextRetryAt: decision.nextRetryAtEpoch,
              lastError: decision.error,
            }),
          );
          if (!written) {
            lost();
            continue;
          }
          tally.retried++;
          events.push({
            event: 'task_retry',
            ...base,
            waitSeconds: decision.waitSeconds,
            error: truncateError(decision.error, limit),
          });
        } else {
          const written = await this.written(
            rowByRow,
            store.applyTransition(tx, source, {
              transition: 'fail',
              id: task.id,
              fence: task.fence,
              attempts: decision.attempts,
              lastError: decision.error,
            }),
          );
          if (!written) {
            lost();
            continue;
          }
          tally.failed++;
          events.push({
            event: 'task_failed',
            ...base,
            exhausted: decision.exhausted,
            error: truncateError(decision.error, limit),
          });
        }
      }
      for (const group of successes.values()) {
        const changed = await store.succeedClaimed(tx, source, group.ids, group.fence);
        if (changed !== group.ids.length) {
          if (!rowByRow) throw new GroupMissed();
          throw new Error(`success changed ${changed} of ${group.ids.length} held rows; rolled back`);
        }
        tally.succeeded += changed;
      }
      return tally;
    });
    this.counts.succeeded += tally.succeeded;
    this.counts.delivered += tally.delivered;
    this.counts.retried += tally.retried;
    this.counts.failed += tally.failed;
    this.counts.released += tally.released;
    this.counts.lostRace += tally.lostRace;
    for (const event of events) this.log(event);
  }

  /**
   * Whether a fenced write took: 0 rows is a lost race. In the row-by-row pass the row was read and
   * locked as held, so it must take the write; anything else means the lock did not hold, and the
   * flush rolls back.
   */
  private async written(rowByRow: boolean, changed: Promise<number>): Promise<boolean> {
    const n = await changed;
    if (n === 1) return true;
    if (rowByRow || n !== 0) throw new Error(`a held claim took ${n} writes instead of 1; rolled back`);
    return false;
  }
}

/** A grouped success changed fewer rows than it named: redo the flush row by row. */
class GroupMissed extends Error {
  constructor() {
    super('a grouped success missed a row');
  }
}
