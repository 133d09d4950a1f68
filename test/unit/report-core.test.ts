import { describe, expect, it } from 'vitest';
import { breachFingerprint, decideNotify } from '../../src/core/report-cooldown.js';
import { combineMetrics, failureRate, nearestRank, type Capabilities } from '../../src/core/report.js';
import { DEFAULT_THRESHOLDS, evaluate, parseLimit, resolveThresholds } from '../../src/core/thresholds.js';

const values = (
  v: Partial<
    Record<
      'failureRate' | 'failed' | 'stuck' | 'oldestDue' | 'due' | 'failedOpen' | 'latencyP95',
      number | null
    >
  >,
) => ({
  failureRate: null,
  failed: null,
  stuck: null,
  oldestDue: null,
  due: null,
  failedOpen: null,
  latencyP95: null,
  ...v,
});

describe('thresholds', () => {
  it('defaults: failure rate warn 1% crit 5%, stuck warn 1, oldest due warn 10 min', () => {
    expect(DEFAULT_THRESHOLDS).toMatchObject({
      failureRate: { warn: 0.01, crit: 0.05 },
      stuck: { warn: 1 },
      oldestDue: { warn: 600 },
    });
  });

  it('a metric at its limit breaches it; just under does not; crit wins over warn', () => {
    const t = DEFAULT_THRESHOLDS;
    expect(evaluate(values({ failureRate: 0.0099 }), t).status).toBe('OK');
    expect(evaluate(values({ failureRate: 0.01 }), t).status).toBe('WARNING');
    expect(evaluate(values({ failureRate: 0.0499 }), t).breaches).toEqual([
      { metric: 'failureRate', level: 'warn', value: 0.0499, threshold: 0.01 },
    ]);
    expect(evaluate(values({ failureRate: 0.05 }), t).status).toBe('CRITICAL');
    expect(evaluate(values({ stuck: 0 }), t).status).toBe('OK');
    expect(evaluate(values({ stuck: 1 }), t).status).toBe('WARNING');
    expect(evaluate(values({ oldestDue: 599 }), t).status).toBe('OK');
    expect(evaluate(values({ oldestDue: 600 }), t).status).toBe('WARNING');
  });

  it('a metric that cannot be computed (null) never breaches', () => {
    expect(evaluate(values({}), resolveThresholds(undefined, ['failedOpen.crit=0'])).status).toBe('OK');
    expect(
      evaluate(values({ failedOpen: 0 }), resolveThresholds(undefined, ['failedOpen.crit=0'])).status,
    ).toBe('CRITICAL');
  });

  it('reads rates, counts and ages; config overrides defaults and flags override config; off removes a limit', () => {
    expect(parseLimit('failureRate', '2.5%', 'x')).toBe(0.025);
    expect(parseLimit('failureRate', 0.03, 'x')).toBe(0.03);
    expect(parseLimit('oldestDue', '15m', 'x')).toBe(900);
    expect(parseLimit('oldestDue', 30, 'x')).toBe(30);
    const t = resolveThresholds({ failureRate: { warn: '2%' }, stuck: { warn: 3, crit: 10 } }, [
      'stuck.crit=20',
      'oldestDue.warn=off',
    ]);
    expect(t.failureRate).toEqual({ warn: 0.02, crit: 0.05 });
    expect(t.stuck).toEqual({ warn: 3, crit: 20 });
    expect(t.oldestDue).toEqual({});
  });

  it('refuses values that are not of the metric’s unit, naming where they came from', () => {
    expect(() => parseLimit('failureRate', '150%', '--threshold failureRate.warn')).toThrow(
      /--threshold failureRate.warn: '150%' is not a rate/,
    );
    expect(() => parseLimit('stuck', '1.5', 'report.thresholds.stuck.warn')).toThrow(
      /report.thresholds.stuck.warn/,
    );
    expect(() => resolveThresholds(undefined, ['failureRate=1%'])).toThrow(/METRIC.LEVEL=VALUE/);
  });
});

describe('report maths', () => {
  it('failure rate is failed ÷ created, null for an empty window', () => {
    expect(failureRate(3, 200)).toBe(0.015);
    expect(failureRate(0, 0)).toBeNull();
    expect(failureRate(null, 5)).toBeNull();
  });

  it('p95 is the nearest rank ⌈0.95·n⌉', () => {
    expect([1, 2, 19, 20, 21, 37, 100, 200].map((n) => nearestRank(n))).toEqual([
      1, 2, 19, 19, 20, 36, 95, 190,
    ]);
    expect(nearestRank(0)).toBe(0);
  });

  const all: Capabilities = {
    window: true,
    failedInWindowOnly: false,
    latency: true,
    due: true,
    stuck: true,
    failedOpen: true,
  };

  it('adds biz types up, takes the overall p95 from the row it fell in, and the worst oldest due', () => {
    const { metrics, byBizType } = combineMetrics({
      nowEpoch: 10_000,
      capabilities: all,
      window: [
        {
          bizType: 'a',
          created: 10,
          succeeded: 8,
          failed: 2,
          latencySum: 80,
          latencyCount: 8,
          latencyP95: 15,
          latencyP95All: null,
        },
        {
          bizType: 'b',
          created: 30,
          succeeded: 30,
          failed: 0,
          latencySum: 90,
          latencyCount: 30,
          latencyP95: 5,
          latencyP95All: 14,
        },
      ],
      due: [
        { bizType: 'a', count: 1, oldestEpoch: 9_000 },
        { bizType: 'c', count: 2, oldestEpoch: 9_500 },
      ],
      stuck: [],
      failedOpen: [{ bizType: 'a', count: 4 }],
    });
    expect(metrics).toEqual({
      created: 40,
      succeeded: 38,
      failed: 2,
      failureRate: 0.05,
      latencyAvgSeconds: 170 / 38,
      latencyP95Seconds: 14,
      due: 3,
      stuck: 0,
      failedOpen: 4,
      oldestDueSeconds: 1000,
    });
    expect(byBizType.map((b) => b.bizType)).toEqual(['a', 'b', 'c']);
    expect(byBizType[2]).toMatchObject({
      created: 0,
      failureRate: null,
      latencyAvgSeconds: null,
      latencyP95Seconds: null,
      due: 2,
      oldestDueSeconds: 500,
    });
  });

  it('what a profile cannot compute is null everywhere, never 0', () => {
    const none: Capabilities = {
      window: false,
      failedInWindowOnly: false,
      latency: false,
      due: true,
      stuck: false,
      failedOpen: true,
    };
    const { metrics } = combineMetrics({
      nowEpoch: 100,
      capabilities: none,
      window: [],
      due: [],
      stuck: [],
      failedOpen: [{ bizType: 'x', count: 1 }],
    });
    expect(metrics).toEqual({
      created: null,
      succeeded: null,
      failed: null,
      failureRate: null,
      latencyAvgSeconds: null,
      latencyP95Seconds: null,
      due: 0,
      stuck: null,
      failedOpen: 1,
      oldestDueSeconds: null,
    });
  });
});

describe('notification cooldown', () => {
  const warn = breachFingerprint([{ metric: 'stuck', level: 'warn', value: 1, threshold: 1 }]);
  const crit = breachFingerprint([{ metric: 'stuck', level: 'crit', value: 9, threshold: 5 }]);
  const sent = { status: 'WARNING' as const, fingerprint: warn, notifiedEpoch: 1000 };

  it('notifies a new breach, not the same one on the next run, again when it changes level, and once when it clears', () => {
    expect(decideNotify(undefined, 'WARNING', warn, 1000, 3600)).toEqual({ send: true, reason: 'new' });
    expect(decideNotify(sent, 'WARNING', warn, 1300, 3600)).toEqual({ send: false, reason: 'cooldown' });
    expect(decideNotify(sent, 'CRITICAL', crit, 1300, 3600)).toEqual({ send: true, reason: 'changed' });
    expect(decideNotify(sent, 'OK', '', 1300, 3600)).toEqual({ send: true, reason: 'recovered' });
    expect(decideNotify({ ...sent, status: 'OK', fingerprint: '' }, 'OK', '', 1300, 3600)).toEqual({
      send: false,
      reason: 'ok',
    });
    expect(decideNotify(undefined, 'OK', '', 1300, 3600)).toEqual({ send: false, reason: 'ok' });
  });

  it('repeats a persisting breach once the cooldown is over, not a second before', () => {
    expect(decideNotify(sent, 'WARNING', warn, 1000 + 3599, 3600).send).toBe(false);
    expect(decideNotify(sent, 'WARNING', warn, 1000 + 3600, 3600)).toEqual({ send: true, reason: 'repeat' });
  });

  it('fingerprints the breached metrics and levels, not their values or order', () => {
    const a = breachFingerprint([
      { metric: 'stuck', level: 'warn', value: 1, threshold: 1 },
      { metric: 'failureRate', level: 'crit', value: 0.2, threshold: 0.05 },
    ]);
    const b = breachFingerprint([
      { metric: 'failureRate', level: 'crit', value: 0.3, threshold: 0.05 },
      { metric: 'stuck', level: 'warn', value: 4, threshold: 1 },
    ]);
    expect(a).toBe(b);
    expect(a).toBe('failureRate:crit,stuck:warn');
  });
});
