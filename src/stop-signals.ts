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
