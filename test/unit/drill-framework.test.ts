import { describe, expect, it } from 'vitest';
import {
  check,
  drillPrefix,
  isDrillKey,
  newRunId,
  runScenarios,
  type DrillEvent,
  type Scenario,
} from '../../src/core/drill-framework.js';
import { expectationOf } from '../../src/verbs/drill/policy.js';
import { DEFAULT_POLICY, policyFromConfig } from '../../src/core/backoff.js';
import { drillLike } from '../../src/db/sql/drill.js';

describe('drill framework', () => {
  it('records passed steps with their detail and marks the scenario passed', async () => {
    const scenario: Scenario<null> = {
      name: 'ok',
      summary: 'two steps',
      async run(steps) {
        await steps.step('inject', async () => 'task #1');
        await steps.step('verify', async () => 'one row');
      },
    };
    const [result] = await runScenarios([scenario], null);
    expect(result?.status).toBe('passed');
    expect(result?.steps.map((s) => [s.name, s.status, s.detail])).toEqual([
      ['inject', 'passed', 'task #1'],
      ['verify', 'passed', 'one row'],
    ]);
  });

  it('fails the step whose check does not hold and skips every later step without running it', async () => {
    let ranAfter = false;
    const scenario: Scenario<null> = {
      name: 'broken',
      summary: 'fails in the middle',
      async run(steps) {
        await steps.step('inject', async () => 'ok');
        await steps.step('effect exists once', async () => {
          const rows: number = 2;
          check(rows === 1, 'user_coupon has 2 rows for the order');
          return 'unreachable';
        });
        await steps.step('cleanup check', async () => {
          ranAfter = true;
          return 'ran';
        });
      },
    };
    const events: DrillEvent[] = [];
    const [result] = await runScenarios([scenario], null, (e) => events.push(e));
    expect(result?.status).toBe('failed');
    expect(result?.steps.map((s) => s.status)).toEqual(['passed', 'failed', 'skipped']);
    expect(result?.steps[1]?.detail).toBe('user_coupon has 2 rows for the order');
    expect(ranAfter).toBe(false);
    expect(events.filter((e) => e.kind === 'step-end')).toHaveLength(3);
    expect(events.at(-1)?.kind).toBe('scenario-end');
  });

  it('fails a step that throws an unexpected error, naming the error', async () => {
    const scenario: Scenario<null> = {
      name: 'throws',
      summary: '',
      async run(steps) {
        await steps.step('redrive', async () => {
          throw new Error('connect ECONNREFUSED');
        });
      },
    };
    const [result] = await runScenarios([scenario], null);
    expect(result?.steps[0]).toMatchObject({ status: 'failed', detail: 'error: connect ECONNREFUSED' });
  });

  it('fails a step that hangs, after the step timeout', async () => {
    const scenario: Scenario<null> = {
      name: 'hangs',
      summary: '',
      async run(steps) {
        await steps.step('waits forever', () => new Promise<string>(() => {}));
      },
    };
    const [result] = await runScenarios([scenario], null, () => {}, { stepTimeoutMs: 50 });
    expect(result?.steps[0]).toMatchObject({ status: 'failed', detail: 'did not finish within 0.05s' });
  });

  it('records a scenario that throws outside any step as failed', async () => {
    const scenario: Scenario<null> = {
      name: 'setup-fails',
      summary: '',
      async run() {
        throw new Error('no listener');
      },
    };
    const [result] = await runScenarios([scenario], null);
    expect(result?.status).toBe('failed');
    expect(result?.steps[0]?.detail).toContain('no listener');
  });

  it('names drill rows by a run prefix that cannot hold a LIKE wildcard', () => {
    const run = newRunId();
    expect(run).toMatch(/^[0-9a-f]{8}$/);
    expect(isDrillKey(`${drillPrefix(run)}slow-target`, run)).toBe(true);
    expect(isDrillKey('evt-coupon-PAY1', run)).toBe(false);
    expect(drillLike(drillPrefix(run))).toBe(`drill-${run}-%`);
    expect(() => drillLike('drill-%-')).toThrow();
    expect(() => drillLike('')).toThrow();
  });
});

describe('the retry expectation the drill checks against', () => {
  it("gives the seed's schedule with its 10% jitter as windows, and 7 retries", () => {
    const expectation = expectationOf(DEFAULT_POLICY);
    expect(expectation.maxRetries).toBe(7);
    expect(expectation.window(1)).toEqual({ minSeconds: 1, maxSeconds: 2 });
    expect(expectation.window(3)).toEqual({ minSeconds: 16, maxSeconds: 18 });
    expect(expectation.window(7)).toEqual({ minSeconds: 7200, maxSeconds: 7920 });
    expect(expectation.describe).toContain('1s, 4s, 16s, 64s, 5min, 30min, 2h');
  });

  it('follows a configured policy', () => {
    const expectation = expectationOf(
      policyFromConfig({ policy: 'fixed', interval: '10s', maxAttempts: 3 }, 'retry.coupon'),
    );
    expect(expectation.maxRetries).toBe(2);
    expect(expectation.window(2)).toEqual({ minSeconds: 10, maxSeconds: 10 });
  });
});
