import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, policyFromConfig } from '../../src/core/backoff.js';
import type { Dispatcher } from '../../src/dispatch/types.js';
import { EFFECT_KEY, EFFECT_TABLE } from '../../src/db/sql/reference-effect.js';
import { diffDrillRun } from '../../src/verbs/drill/effect-check.js';
import { injectTask, type DrillEnv } from '../../src/verbs/drill/env.js';
import { expectationOf } from '../../src/verbs/drill/policy.js';
import { createDrillSandbox } from '../../src/verbs/drill/sandbox.js';
import { runDrill, type DrillOptions, type DrillResult } from '../../src/verbs/drill/drill.js';

/**
 * Every drill can fail: each scenario runs in-process on the sandbox against a deliberately broken
 * system — a non-idempotent handler, a redrive policy without backoff or without a maximum, a
 * dispatcher that retries permanent errors — and must fail at a clearly named step.
 */
const TIMEOUT_MS = 250;

async function drill(scenario: string, broken: Partial<DrillOptions>): Promise<DrillResult> {
  return runDrill({ timeoutMs: TIMEOUT_MS, policy: DEFAULT_POLICY, scenarios: [scenario], ...broken });
}

function firstFailure(result: DrillResult): { step: string; detail: string } | undefined {
  const step = result.scenarios[0]?.steps.find((s) => s.status === 'failed');
  return step && { step: step.name, detail: step.detail };
}

/** A dispatcher that reports a permanent error (a 4xx) as retryable. */
function retriesPermanentErrors(inner: Dispatcher): Dispatcher {
  return {
    kind: inner.kind,
    async dispatch(task, context) {
      const result = await inner.dispatch(task, context);
      return result.outcome === 'permanent' ? { ...result, outcome: 'retryable' } : result;
    },
    close: () => inner.close?.() ?? Promise.resolve(),
  };
}

describe('each drill fails against a broken system', () => {
  it('passes each scenario against the correct system (the baseline of the cases below)', async () => {
    const result = await runDrill({ timeoutMs: TIMEOUT_MS, policy: DEFAULT_POLICY });
    expect(result.scenarios.map((s) => [s.name, s.status])).toEqual([
      ['unreachable-target', 'passed'],
      ['duplicate-delivery', 'passed'],
      ['permanent-error', 'passed'],
      ['worker-crash', 'passed'],
      ['slow-target', 'passed'],
    ]);
  });

  it('unreachable-target fails when redrive does not back off', async () => {
    const result = await drill('unreachable-target', {
      redrivePolicy: policyFromConfig({ policy: 'fixed', interval: 0 }, 'retry.broken'),
    });
    expect(result.failed).toBe(1);
    expect(firstFailure(result)).toEqual({
      step: 'refused: attempt 2 fails and retry 2 is scheduled per the policy',
      detail: 'retry 2 is due 0s after the failure; the policy says 4s–5s',
    });
  });

  it('unreachable-target fails when redrive never gives up', async () => {
    const result = await drill('unreachable-target', {
      redrivePolicy: policyFromConfig({ policy: 'schedule', maxAttempts: 500 }, 'retry.broken'),
    });
    expect(firstFailure(result)?.step).toBe(
      'refused: attempt 8 fails and the task is failed after 7 retries',
    );
    expect(firstFailure(result)?.detail).toContain('no maximum of attempts is enforced');
  });

  it('unreachable-target fails when redrive gives up too early', async () => {
    const result = await drill('unreachable-target', {
      redrivePolicy: policyFromConfig({ policy: 'schedule', maxAttempts: 3 }, 'retry.broken'),
    });
    expect(firstFailure(result)).toMatchObject({
      step: 'refused: attempt 3 fails and retry 3 is scheduled per the policy',
    });
    expect(firstFailure(result)?.detail).toContain('is failed');
  });

  it('duplicate-delivery fails against the non-idempotent handler', async () => {
    const result = await drill('duplicate-delivery', { handlerVariant: 'non-idempotent' });
    expect(firstFailure(result)).toMatchObject({
      step: 'deliver the same event again, after the first: the effect is still once',
    });
    expect(result.scenarios[0]?.steps.slice(-1)[0]?.status).toBe('skipped');
  });

  it('permanent-error fails when a 4xx is retried', async () => {
    const result = await drill('permanent-error', { wrapDispatcher: retriesPermanentErrors });
    expect(firstFailure(result)).toMatchObject({ step: 'redrive: the task is failed on its first attempt' });
    expect(firstFailure(result)?.detail).toContain('a permanent error is being retried');
  });

  it('worker-crash fails against the non-idempotent handler', async () => {
    const result = await drill('worker-crash', { handlerVariant: 'non-idempotent' });
    expect(firstFailure(result)).toEqual({
      step: 'the effect exists once',
      detail: expect.stringMatching(
        /user_coupon has 2 rows for drill-[0-9a-f]{8}-worker-crash after the re-drive/,
      ),
    });
  });

  it('slow-target fails against the non-idempotent handler', async () => {
    const result = await drill('slow-target', { handlerVariant: 'non-idempotent' });
    expect(firstFailure(result)?.step).toBe('the effect exists once');
  });
});

describe('the diff check of a drill run', () => {
  it('finds duplicated, missing and orphan effects of the run, and nothing outside it', async () => {
    const sandbox = await createDrillSandbox();
    try {
      const runId = 'a1b2c3d4';
      const env = {
        runId,
        source: sandbox.source,
        effectDb: sandbox.db,
        effect: { table: EFFECT_TABLE, key: EFFECT_KEY },
        bizType: `drill-${runId}`,
        handlerBizType: 'coupon',
        policy: expectationOf(DEFAULT_POLICY),
        inserted: [],
      } as unknown as DrillEnv;
      const once = await injectTask(env, 'once');
      const twice = await injectTask(env, 'twice');
      const none = await injectTask(env, 'none');
      await sandbox.db.execute(`UPDATE async_task SET status = 2`);
      const grant = `INSERT INTO ${EFFECT_TABLE} (order_id, coupon_template_id) VALUES (?, 'T')`;
      for (const key of [
        once.bizId,
        twice.bizId,
        twice.bizId,
        `drill-${runId}-orphan`,
        'PAY-not-a-drill-row',
        'PAY-not-a-drill-row',
      ]) {
        await sandbox.db.execute(grant, [key]);
      }
      const diff = await diffDrillRun(env);
      expect(diff.tasksChecked).toBe(3);
      expect(diff.findings).toMatchObject({ duplicate: 1, missing: 1, orphan: 1 });
      expect(none.bizId).toContain('none');
    } finally {
      await sandbox.dispose(false);
    }
  });
});
