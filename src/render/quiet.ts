/**
 * `--quiet`: everything a run writes to stdout and stderr is held back, and printed only when the
 * run needs a person (it failed, or exited 1/2 with findings). A cron job that succeeded and found
 * nothing therefore writes zero bytes, so cron mails only when it matters; errors always print.
 */

/** Held output beyond this is printed after all (a quiet run is not a way to buffer a large stream). */
const MAX_HELD_BYTES = 8 * 1024 * 1024;

type Write = typeof process.stdout.write;

export type QuietOutcome = 'holding' | 'silent' | 'shown';

export interface QuietGate {
  /** Writes to stderr past the gate (a log the user asked for explicitly, e.g. `--log-format json`). */
  throughErr(text: string): void;
  /** Ends the hold: prints what was held when `show`, drops it otherwise. */
  release(show: boolean): QuietOutcome;
  readonly outcome: QuietOutcome;
}

export function holdOutput(): QuietGate {
  const out = process.stdout;
  const err = process.stderr;
  const realOut: Write = out.write.bind(out) as Write;
  const realErr: Write = err.write.bind(err) as Write;
  const held: Array<{ stream: 'out' | 'err'; chunk: string | Uint8Array }> = [];
  let bytes = 0;
  let outcome: QuietOutcome = 'holding';

  const flush = (): void => {
    for (const { stream, chunk } of held.splice(0)) (stream === 'out' ? realOut : realErr)(chunk);
  };
  const restore = (): void => {
    out.write = realOut;
    err.write = realErr;
  };
  const holder =
    (stream: 'out' | 'err') =>
    (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
      const done = rest.find((r): r is () => void => typeof r === 'function');
      held.push({ stream, chunk });
      bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      if (bytes > MAX_HELD_BYTES) {
        restore();
        flush();
        outcome = 'shown';
      }
      done?.();
      return true;
    };
  out.write = holder('out') as Write;
  err.write = holder('err') as Write;

  return {
    throughErr(text) {
      realErr(text.endsWith('\n') ? text : `${text}\n`);
    },
    release(show) {
      if (outcome !== 'holding') return outcome;
      restore();
      if (show) flush();
      else held.length = 0;
      outcome = show ? 'shown' : 'silent';
      return outcome;
    },
    get outcome() {
      return outcome;
    },
  };
}
