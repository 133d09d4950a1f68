/**
 * SIGINT/SIGTERM for a run that works in batches: the first signal asks it to stop after the
 * batch in hand (`onFirst` says so), a second exits at once (130) — the batch in hand is rolled back.
 */
export async function untilStopped<T>(
  onFirst: () => void,
  run: (shouldStop: () => boolean) => Promise<T>,
): Promise<T> {
  let stopping = false;
  const onSignal = () => {
    if (stopping) process.exit(130);
    stopping = true;
    onFirst();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await run(() => stopping);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * SIGINT/SIGTERM for a run that settles what is in flight: the first signal aborts `stop` (claim
 * no more; `onFirst` says so), a second aborts `abort` (give up on the tasks in flight).
 */
export function stopThenAbort(onFirst: (signal: NodeJS.Signals) => void): {
  stop: AbortSignal;
  abort: AbortSignal;
  /** The first signal received, if any (SIGINT is Ctrl-C: the run exits 130 after settling). */
  received(): NodeJS.Signals | undefined;
  dispose(): void;
} {
  const stop = new AbortController();
  const abort = new AbortController();
  let first: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!stop.signal.aborted) {
      first = signal;
      onFirst(signal);
      stop.abort();
    } else abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    stop: stop.signal,
    abort: abort.signal,
    received: () => first,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
