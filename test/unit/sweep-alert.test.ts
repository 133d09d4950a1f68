import { describe, expect, it } from 'vitest';
import { compileRules } from '../../src/core/sweep-rules.js';
import { markdownText } from '../../src/notify/alert.js';
import { buildSecondFailureAlert, type SecondFailure } from '../../src/verbs/sweep/alert.js';
import { setPasteConnection, withPasteConnection } from '../../src/render/paste.js';

const [rule] = compileRules([{ name: 'sms', action: 'retry', maxSweeps: 1 }], 'UTC');

function failure(id: number, bizType: string, identity: string): SecondFailure {
  return {
    planned: {
      row: {},
      id,
      bizType,
      lastError: 'sms channel: 429 rate limited',
      rule: rule as NonNullable<typeof rule>,
      identity,
      failedAt: 1_764_600_000,
      sweepsBefore: 1,
      decision: { outcome: 'second-failure', eligibleAt: null },
    },
    sourceName: 'failed',
    table: 'failed_jobs',
    db: {} as SecondFailure['db'],
  };
}

/** The run an alert is built for. */
const CONTEXT = {
  targets: [],
  nowIso: '2026-12-01T10:00:00Z',
  sinceSeconds: 3600,
  runId: 'r1',
  operator: 'o',
  host: 'h',
};

describe('the second-failure alert', () => {
  it('names the job class, a row, the job identity and the error', () => {
    const alert = buildSecondFailureAlert(
      [failure(7, 'app\\job\\SendPaidSmsJob', 'q0Wm1Zr8'), failure(9, 'app\\job\\SendPaidSmsJob', 'x1')],
      CONTEXT,
    );
    expect(alert.title).toMatch(/2 second failures/);
    expect(alert.failing).toEqual([
      expect.objectContaining({
        bizType: 'app\\job\\SendPaidSmsJob',
        failed: 2,
        sample: expect.objectContaining({
          id: '7',
          eventId: 'q0Wm1Zr8',
          error: 'sms channel: 429 rate limited',
        }),
      }),
    ]);
    const text = markdownText(alert);
    expect(text).toContain('SendPaidSmsJob');
    expect(text).toContain('q0Wm1Zr8');
  });

  it("completes the compensate command it tells a person to run with the run's connection", () => {
    setPasteConnection({ config: 'ops.yaml', source: 'failed' });
    try {
      const alert = buildSecondFailureAlert([failure(7, 'app\\job\\SendPaidSmsJob', 'q0Wm1Zr8')], {
        ...CONTEXT,
        paste: withPasteConnection,
      });
      expect(alert.notes).toContainEqual(
        expect.stringContaining('`taskrecon compensate --action retry --config ops.yaml --source failed`'),
      );
    } finally {
      setPasteConnection({});
    }
  });
});
