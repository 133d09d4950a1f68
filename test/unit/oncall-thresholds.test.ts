import { describe, expect, it } from 'vitest';
import { thresholdValues, type ReportMetrics } from '../../src/core/report.js';
import { evaluate, resolveThresholds } from '../../src/core/thresholds.js';

const metrics = (over: Partial<ReportMetrics>): ReportMetrics => ({
  created: 100,
  succeeded: 100,
  failed: 0,
  failureRate: 0,
  latencyAvgSeconds: 1,
  latencyP95Seconds: 1,
  due: 0,
  stuck: 0,
  failedOpen: 0,
  oldestDueSeconds: null,
  ...over,
});

describe('a threshold on new failures in the window', () => {
  // "More than 10 new failures in 15 minutes → WeCom": failed counts what failed in the window.
  const thresholds = resolveThresholds(
    { failed: { warn: 10 }, failureRate: { warn: 'off', crit: 'off' } },
    [],
  );

  it('warns at 10 new failures, not at 9', () => {
    expect(evaluate(thresholdValues(metrics({ failed: 9 })), thresholds).status).toBe('OK');
    expect(evaluate(thresholdValues(metrics({ failed: 10 })), thresholds)).toEqual({
      status: 'WARNING',
      breaches: [{ metric: 'failed', level: 'warn', value: 10, threshold: 10 }],
    });
  });

  it('is set by --threshold failed.crit=N too', () => {
    const t = resolveThresholds(undefined, ['failed.crit=50']);
    expect(evaluate(thresholdValues(metrics({ failed: 50, failureRate: 0 })), t).status).toBe('CRITICAL');
  });
});

describe('a failed-job table with open failed jobs', () => {
  it('is not OK by default (failedOpen warns at 1), while a task table with none is', () => {
    const failedJobs = resolveThresholds(undefined, [], { failedJobs: true });
    expect(failedJobs.failedOpen).toEqual({ warn: 1 });
    expect(evaluate(thresholdValues(metrics({ failedOpen: 1 })), failedJobs).status).toBe('WARNING');
    expect(evaluate(thresholdValues(metrics({ failedOpen: 0 })), failedJobs).status).toBe('OK');
    // A task table's failed rows are judged by the failure rate, as before.
    expect(resolveThresholds(undefined, []).failedOpen).toEqual({});
  });

  it('lets the config or a flag turn the default off', () => {
    const off = resolveThresholds({ failedOpen: { warn: 'off' } }, [], { failedJobs: true });
    expect(evaluate(thresholdValues(metrics({ failedOpen: 5 })), off).status).toBe('OK');
    expect(resolveThresholds(undefined, ['failedOpen.warn=off'], { failedJobs: true }).failedOpen).toEqual(
      {},
    );
  });
});
