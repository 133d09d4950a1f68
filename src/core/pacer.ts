import { systemClock, type LocalClock } from './clock.js';

/**
 * Rates (`--rate 200/s`) and the one pacer that keeps them: compensate's batches, the sweep's
 * retries and the Redis and RabbitMQ moves all go at most `rate` items per second, counted from the
 * start of the run (a slow batch is not punished twice), on a LocalClock a test can drive by hand.
 */

/** Parses `--rate 200/s`, `200`, `12000/m` into rows per second. */
export function parseRate(input: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*(s|sec|m|min|h))?\s*$/.exec(input);
  if (!match) return undefined;
  const n = Number(match[1]);
  const per = match[2] === 'm' || match[2] === 'min' ? 60 : match[2] === 'h' ? 3600 : 1;
  const rate = n / per;
  return rate > 0 ? rate : undefined;
}

/** Rows per second → rows per batch and the pause that keeps the pace (one batch at least every 200 ms at high rates). */
export function pacing(
  ratePerSecond: number | undefined,
  maxBatch: number,
): { batch: number; minBatchMs: number } {
  if (!ratePerSecond) return { batch: maxBatch, minBatchMs: 0 };
  const batch = Math.max(1, Math.min(maxBatch, Math.floor(ratePerSecond / 5)));
  return { batch, minBatchMs: (batch / ratePerSecond) * 1000 };
}

/** Keeps a run at or under `ratePerSecond` items a second from the moment it is made; no rate, no wait. */
export class Pacer {
  private readonly startedMs: number;

  constructor(
    private readonly ratePerSecond: number | undefined,
    private readonly clock: LocalClock = systemClock,
  ) {
    this.startedMs = clock.nowMs();
  }

  /** Sleeps until `done` items since the start are within the rate (at once when they already are). */
  async wait(done: number): Promise<void> {
    if (!this.ratePerSecond) return;
    const wait = this.startedMs + (done / this.ratePerSecond) * 1000 - this.clock.nowMs();
    if (wait > 0) await this.clock.sleep(wait);
  }
}
