/**
 * The local clock: this process's own time, for pacing (the pause between claims), for how long a
 * claim has waited before dispatch and for durations. The database's clock decides leases and due
 * times; this one only paces the run, so a test can drive it by hand (ManualClock) instead of sleeping.
 */
export interface LocalClock {
  /** Milliseconds since the epoch. */
  nowMs(): number;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Calls `tick` every `ms` until the returned stop() (a timer per running task: no promise, no signal).
   * With `unref`, the timer alone does not keep the process alive.
   */
  every(ms: number, tick: () => void, options?: { unref?: boolean }): { stop(): void };
}

export const systemClock: LocalClock = {
  nowMs: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    }),
  every: (ms, tick, options) => {
    const timer = setInterval(tick, ms);
    if (options?.unref) timer.unref();
    return { stop: () => clearInterval(timer) };
  },
};

/** A clock that moves only when told (tests): sleepers wake once advance() passes their deadline. */
export class ManualClock implements LocalClock {
  private sleepers: Array<{ until: number; wake: () => void }> = [];

  constructor(private now = 1_800_000_000_000) {}

  nowMs(): number {
    return this.now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (ms <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper = { until: this.now + ms, wake: () => resolve() };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', () => this.wake((s) => s === sleeper), { once: true });
    });
  }

  /** Ticks once each time advance() passes its next deadline (once per advance, however far it moves). */
  every(ms: number, tick: () => void): { stop(): void } {
    let current: { until: number; wake: () => void } | undefined;
    const schedule = () => {
      current = {
        until: this.now + ms,
        wake: () => {
          tick();
          schedule();
        },
      };
      this.sleepers.push(current);
    };
    schedule();
    return {
      stop: () => {
        this.sleepers = this.sleepers.filter((s) => s !== current);
        current = undefined;
      },
    };
  }

  /** Moves time forward and wakes every sleeper whose time has come. */
  advance(ms: number): void {
    this.now += ms;
    this.wake((s) => s.until <= this.now);
  }

  private wake(due: (s: { until: number }) => boolean): void {
    const woken = this.sleepers.filter(due);
    this.sleepers = this.sleepers.filter((s) => !due(s));
    for (const s of woken) s.wake();
  }
}
