import { systemClock, type LocalClock } from '../../core/clock.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { ClaimCursor, ClaimedTask, ClaimKind, ClaimStore } from '../../db/port/index.js';
import type { RedriveCounts, RedriveEvent } from './types.js';

/** A claimed task and when this process claimed it (its local clock, for the lease check before dispatch). */
export interface QueuedTask {
  task: ClaimedTask;
  claimedAtMs: number;
}

export interface FeedOptions {
  batch: number;
  pauseMs: number;
  leaseSeconds: number;
  maxTasks?: number;
  cutoffEpoch: number;
  stuckCutoffEpoch: number;
  bizTypes?: string[];
  ids?: TaskId[];
  skipLocked: boolean;
  stopped: () => boolean;
  stop?: AbortSignal;
  /** Paces the claims (default: the system clock). */
  clock?: LocalClock;
}

/** A lock conflict (the dialect's deadlock or lock-wait codes) in a claim transaction is retried this many times. */
const LOCK_RETRIES = 3;

/**
 * Feeds claimed tasks to the dispatch workers, claiming the next page only when the queue runs dry:
 * so a slow task in flight never stalls the others, and no more rows are held than are being worked
 * on. Stuck rows (expired leases) come first, then due rows; each kind is paged by
 * (next_retry_time, id) from a cursor, with the run's fixed cutoffs. One claim at a time.
 */
export class Feeder {
  private readonly queue: QueuedTask[] = [];
  private readonly kinds: ClaimKind[] = ['stuck', 'due'];
  private kindIndex = 0;
  private cursor: ClaimCursor | undefined;
  private refilling: Promise<void> | undefined;
  private remaining: number;
  private lastClaimAt = 0;

  constructor(
    private readonly source: BoundSource,
    private readonly store: ClaimStore,
    private readonly options: FeedOptions,
    private readonly counts: RedriveCounts,
    private readonly log: (event: RedriveEvent) => void,
  ) {
    this.remaining = options.maxTasks ?? Number.POSITIVE_INFINITY;
  }

  /** The next claimed task, or undefined when the backlog (as of the cutoff) is done or the run stops. */
  async next(): Promise<QueuedTask | undefined> {
    for (;;) {
      if (this.options.stopped()) return undefined; // what is still queued is released by the caller (drain)
      const queued = this.queue.shift();
      if (queued) return queued;
      if (this.done()) return undefined;
      this.refilling ??= this.refill().finally(() => {
        this.refilling = undefined;
      });
      await this.refilling;
    }
  }

  /** Claimed tasks not handed out yet (to release on shutdown). */
  drain(): QueuedTask[] {
    return this.queue.splice(0);
  }

  private done(): boolean {
    return this.options.stopped() || this.remaining <= 0 || this.kindIndex >= this.kinds.length;
  }

  private async refill(): Promise<void> {
    const { options } = this;
    const clock = options.clock ?? systemClock;
    while (this.queue.length === 0 && !this.done()) {
      const wait = this.lastClaimAt + options.pauseMs - clock.nowMs();
      if (this.lastClaimAt > 0 && wait > 0) await clock.sleep(wait, options.stop);
      if (this.done()) return;
      const kind = this.kinds[this.kindIndex] as ClaimKind;
      const limit = Math.min(options.batch, this.remaining);
      const batch = await withLockRetry(this.source.db.dialect.lockConflictCodes, clock, () =>
        this.store.claimBatch(this.source, {
          kind,
          limit,
          cutoffEpoch: options.cutoffEpoch,
          stuckCutoffEpoch: options.stuckCutoffEpoch,
          leaseSeconds: options.leaseSeconds,
          bizTypes: options.bizTypes,
          ids: options.ids,
          cursor: this.cursor,
          skipLocked: options.skipLocked,
        }),
      );
      this.lastClaimAt = clock.nowMs();
      this.cursor = batch.cursor;
      if (batch.tasks.length > 0) {
        this.counts.claimed += batch.tasks.length;
        if (kind === 'stuck') this.counts.recoveredStuck += batch.tasks.length;
        this.remaining -= batch.tasks.length;
        this.log({ event: 'batch_claimed', kind, count: batch.tasks.length });
        for (const task of batch.tasks) this.queue.push({ task, claimedAtMs: this.lastClaimAt });
      }
      if (batch.scanned < limit) {
        // A short page is the last one of this kind.
        this.kindIndex++;
        this.cursor = undefined;
      }
    }
  }
}

async function withLockRetry<T>(
  conflictCodes: readonly string[],
  clock: LocalClock,
  fn: () => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt > LOCK_RETRIES || code === undefined || !conflictCodes.includes(code)) throw error;
      await clock.sleep(20 * attempt);
    }
  }
}

/** Sleeps on the system clock (kept for callers outside a run). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return systemClock.sleep(ms, signal);
}
