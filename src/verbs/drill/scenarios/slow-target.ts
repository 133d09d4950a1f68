import {
  effectCount,
  expectStatus,
  fastForward,
  injectTask,
  observe,
  type DrillEnv,
  type DrillTask,
} from '../env.js';
import { check, type Scenario } from '../../../core/drill-framework.js';

/**
 * The classic task-table design's incident: the handler does the work but answers after the caller's timeout, so
 * the caller cannot tell it happened. The task is retried — and the effect must still be once.
 */
export const slowTarget: Scenario<DrillEnv> = {
  name: 'slow-target',
  summary: 'the handler applies the effect but answers after the timeout: retried, effect once',
  async run(steps, env) {
    let task: DrillTask | undefined;
    await steps.step('inject a task; the handler will answer after the timeout', async () => {
      env.target.fault = 'slow';
      // Well past the timeout, whatever the granularity of the client's timers.
      env.target.slowMs = env.timeoutMs * 2 + 1000;
      task = await injectTask(env, 'slow-target');
      return `task #${task.id} ${task.eventId}; the handler answers after ${env.target.slowMs}ms, the timeout is ${env.timeoutMs}ms`;
    });
    await steps.step('redrive times out: a retry is scheduled, the effect is already in', async () => {
      const t = task as DrillTask;
      await env.system.redrivePass(env.target.url);
      const row = await observe(env, t);
      expectStatus(row, 'pending', 'after a timed-out delivery');
      check(row.attempts === 1, `the task counts ${row.attempts} attempts after one timed-out delivery`);
      const effects = await effectCount(env, t);
      check(effects === 1, `the slow handler left ${effects} rows for ${t.bizId}, expected 1`);
      return `retry 1 due ${row.nextRetryAt}; last error: ${row.lastError}; 1 row already`;
    });
    await steps.step('the retry reaches the handler again: success', async () => {
      const t = task as DrillTask;
      env.target.fault = 'none';
      await fastForward(env, t);
      await env.system.redrivePass(env.target.url);
      expectStatus(await observe(env, t), 'success', 'after the retry');
      return `fast-forwarded; success after ${env.target.deliveriesOf(t.eventId)} deliveries`;
    });
    await steps.step('the effect exists once', async () => {
      const t = task as DrillTask;
      const effects = await effectCount(env, t);
      check(
        effects === 1,
        `${env.effect.table} has ${effects} rows for ${t.bizId} after the retry: the handler is not idempotent`,
      );
      return `1 row in ${env.effect.table}`;
    });
  },
};
