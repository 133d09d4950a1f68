import { jitterBoundMs, type RetryPolicy } from '../../core/backoff.js';
import type { RetryExpectation } from './env.js';

/**
 * What the drill expects of a retry policy: after failed attempt n the task waits at least the
 * policy's delay and at most the delay plus its jitter bound (whole seconds, rounded up), and it is
 * failed after `maxAttempts` attempts.
 */
export function expectationOf(policy: RetryPolicy): RetryExpectation {
  const waits: string[] = [];
  for (let n = 1; n < Math.min(policy.maxAttempts, 9); n++) waits.push(short(policy.baseDelayMs(n)));
  const more = policy.maxAttempts > 9 ? ', …' : '';
  const jitter =
    policy.jitter.kind === 'fraction'
      ? `+≤${Math.round(policy.jitter.value * 100)}%`
      : `+≤${short(policy.jitter.ms)}`;
  return {
    describe: `${policy.name} ${waits.join(', ')}${more} (jitter ${jitter}), failed after ${policy.maxAttempts} attempts`,
    maxRetries: Math.max(0, policy.maxAttempts - 1),
    window(retry) {
      const base = policy.baseDelayMs(retry);
      return {
        minSeconds: base / 1000,
        maxSeconds: Math.ceil((base + jitterBoundMs(policy.jitter, base)) / 1000),
      };
    },
  };
}

function short(ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000}min`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
