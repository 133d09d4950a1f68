import { describe, expect, it } from 'vitest';
import {
  DEFAULT_POLICY,
  DEFAULT_SCHEDULE_MS,
  MAX_RETRY_AFTER_MS,
  parseJitter,
  policyFromConfig,
  retryDelayMs,
  RetryPolicies,
} from '../../src/core/backoff.js';
import { decide } from '../../src/core/retry-decision.js';

const noJitter = () => 0;
const maxJitter = () => 0.999999;

describe('the default retry policy (the classic task-table design)', () => {
  it('waits exactly 1s, 4s, 16s, 64s, 5m, 30m, 2h before jitter and allows 8 attempts', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(DEFAULT_POLICY, n, undefined, noJitter))).toEqual([
      1_000, 4_000, 16_000, 64_000, 300_000, 1_800_000, 7_200_000,
    ]);
    expect(DEFAULT_POLICY.maxAttempts).toBe(8);
  });

  it('keeps jitter within +0..10% of each wait, never earlier', () => {
    for (const [i, base] of DEFAULT_SCHEDULE_MS.entries()) {
      const high = retryDelayMs(DEFAULT_POLICY, i + 1, undefined, maxJitter);
      expect(high).toBeGreaterThan(base);
      expect(high).toBeLessThanOrEqual(base * 1.1);
      for (let k = 0; k < 50; k++) {
        const d = retryDelayMs(DEFAULT_POLICY, i + 1, undefined);
        expect(d).toBeGreaterThanOrEqual(base);
        expect(d).toBeLessThanOrEqual(Math.round(base * 1.1));
      }
    }
  });

  it('ends failed on the 8th failure, retries on the 7th', () => {
    const r = { outcome: 'retryable' as const, error: 'HTTP 503' };
    const seventh = decide({
      result: r,
      attemptsBefore: 6,
      policy: DEFAULT_POLICY,
      nowEpoch: 1000,
      random: noJitter,
    });
    expect(seventh).toMatchObject({
      transition: 'retry',
      attempts: 7,
      nextRetryAtEpoch: 1000 + 7200,
      waitSeconds: 7200,
    });
    const eighth = decide({ result: r, attemptsBefore: 7, policy: DEFAULT_POLICY, nowEpoch: 1000 });
    expect(eighth).toMatchObject({ transition: 'fail', attempts: 8, exhausted: true });
  });
});

describe('policies from config', () => {
  it('fixed waits the interval every time', () => {
    const p = policyFromConfig({ policy: 'fixed', interval: '10s', maxAttempts: 3 }, 'retry.x');
    expect([1, 2, 5].map((n) => retryDelayMs(p, n, undefined, maxJitter))).toEqual([10_000, 10_000, 10_000]);
    expect(p.maxAttempts).toBe(3);
  });

  it('exponential grows by the factor and stops at the cap', () => {
    const p = policyFromConfig({ policy: 'exponential', base: '10s', factor: 3, cap: '1h' }, 'retry.sms');
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(p, n, undefined, maxJitter))).toEqual([
      10_000, 30_000, 90_000, 270_000, 810_000, 2_430_000, 3_600_000,
    ]);
  });

  it('exponential-jitter stays within +0..20% of the exponential by default, and a configured absolute jitter bounds it', () => {
    const p = policyFromConfig({ policy: 'exponential-jitter', base: '1s', cap: '1m' }, 'retry.a');
    expect(retryDelayMs(p, 3, undefined, noJitter)).toBe(4_000);
    expect(retryDelayMs(p, 3, undefined, maxJitter)).toBe(4_800);
    const q = policyFromConfig({ policy: 'exponential-jitter', base: '1s', jitter: '500ms' }, 'retry.b');
    expect(retryDelayMs(q, 10, undefined, maxJitter)).toBe(Math.round(512_000 + 500 * 0.999999));
  });

  it('a custom schedule sets maxAttempts to its length + 1 unless told, and repeats its last wait beyond', () => {
    const p = policyFromConfig({ policy: 'schedule', schedule: ['2s', '1m'], jitter: 0 }, 'retry.c');
    expect(p.maxAttempts).toBe(3);
    const q = policyFromConfig(
      { policy: 'schedule', schedule: ['2s', '1m'], maxAttempts: 5, jitter: 0 },
      'retry.c',
    );
    expect([1, 2, 3, 4].map((n) => retryDelayMs(q, n, undefined))).toEqual([2_000, 60_000, 60_000, 60_000]);
  });

  it('refuses a bad duration or jitter, naming the key', () => {
    expect(() => policyFromConfig({ policy: 'schedule', schedule: ['2x'] }, 'retry.sms')).toThrow(
      /retry\.sms\.schedule\[0\]/,
    );
    expect(() => parseJitter('150%', 'retry.sms.jitter')).toThrow(/retry\.sms\.jitter/);
    expect(parseJitter('10%', 'j')).toEqual({ kind: 'fraction', value: 0.1 });
    expect(parseJitter('2s', 'j')).toEqual({ kind: 'absolute', ms: 2000 });
  });

  it('picks the biz type policy, then default, then the seed schedule', () => {
    const policies = RetryPolicies.fromConfig({
      sms: { policy: 'fixed', interval: '5s' },
      default: { policy: 'fixed', interval: '7s' },
    });
    expect(retryDelayMs(policies.for('sms'), 1, undefined)).toBe(5_000);
    expect(retryDelayMs(policies.for('coupon'), 1, undefined)).toBe(7_000);
    expect(RetryPolicies.fromConfig(undefined).for('x')).toBe(DEFAULT_POLICY);
  });
});

describe('Retry-After', () => {
  it('waits at least what the handler asked, capped at a day', () => {
    expect(retryDelayMs(DEFAULT_POLICY, 1, 30_000, noJitter)).toBe(30_000);
    expect(retryDelayMs(DEFAULT_POLICY, 7, 30_000, noJitter)).toBe(7_200_000);
    expect(retryDelayMs(DEFAULT_POLICY, 1, 10 * MAX_RETRY_AFTER_MS, noJitter)).toBe(MAX_RETRY_AFTER_MS);
    const d = decide({
      result: { outcome: 'retryable', retryAfterMs: 120_500 },
      attemptsBefore: 0,
      policy: DEFAULT_POLICY,
      nowEpoch: 50,
      random: noJitter,
    });
    expect(d).toMatchObject({ transition: 'retry', waitSeconds: 121, nextRetryAtEpoch: 171 });
  });
});

describe('decisions', () => {
  it('a permanent failure fails at once, counting the attempt', () => {
    expect(
      decide({
        result: { outcome: 'permanent', error: 'HTTP 404' },
        attemptsBefore: 0,
        policy: DEFAULT_POLICY,
        nowEpoch: 0,
      }),
    ).toEqual({
      transition: 'fail',
      attempts: 1,
      error: 'HTTP 404',
      exhausted: false,
    });
  });

  it("a row's own max_attempts wins over the policy", () => {
    const r = { outcome: 'retryable' as const };
    expect(
      decide({ result: r, attemptsBefore: 2, policy: DEFAULT_POLICY, rowMaxAttempts: 3, nowEpoch: 0 })
        .transition,
    ).toBe('fail');
    expect(
      decide({ result: r, attemptsBefore: 1, policy: DEFAULT_POLICY, rowMaxAttempts: 3, nowEpoch: 0 })
        .transition,
    ).toBe('retry');
  });

  it('success needs no write but the status', () => {
    expect(
      decide({ result: { outcome: 'success' }, attemptsBefore: 3, policy: DEFAULT_POLICY, nowEpoch: 0 }),
    ).toEqual({ transition: 'succeed' });
  });
});
