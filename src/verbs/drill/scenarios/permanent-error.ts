import { effectCount, expectStatus, injectTask, observe, type DrillEnv, type DrillTask } from '../env.js';
import { check, type Scenario } from '../../../core/drill-framework.js';

/** The error classes: a 4xx (other than 408/425/429) is permanent — straight to failed, never retried. */
export const permanentError: Scenario<DrillEnv> = {
  name: 'permanent-error',
  summary: 'the handler answers 422: the task is failed at once, with no retry',
  async run(steps, env) {
    let task: DrillTask | undefined;
    await steps.step('inject a task; the handler will answer 422', async () => {
      env.target.fault = 'reject';
      task = await injectTask(env, 'permanent-error');
      return `task #${task.id} ${task.eventId} → ${env.target.url} (fault: reject with 422)`;
    });
    await steps.step('redrive: the task is failed on its first attempt', async () => {
      const t = task as DrillTask;
      await env.system.redrivePass(env.target.url);
      const row = await observe(env, t);
      check(
        row.status !== 'pending',
        `the task was scheduled for retry ${row.nextRetryAt} after a 422: a permanent error is being retried`,
      );
      expectStatus(row, 'failed', 'after a 422');
      check((row.attempts ?? 0) <= 1, `the task counts ${row.attempts} attempts for one delivery`);
      check(/422/.test(row.lastError ?? ''), `last_error does not name the 422: ${row.lastError ?? 'null'}`);
      return `failed after 1 attempt; last error: ${row.lastError}`;
    });
    await steps.step('a later redrive does not retry it', async () => {
      const t = task as DrillTask;
      const before = env.target.deliveriesOf(t.eventId);
      await env.system.redrivePass(env.target.url);
      const row = await observe(env, t);
      const delivered = env.target.deliveriesOf(t.eventId);
      check(delivered === before, `a failed task was delivered again (${delivered - before} more times)`);
      expectStatus(row, 'failed', 'after another pass');
      return `${delivered} delivery in all; still failed`;
    });
    await steps.step('no business effect', async () => {
      env.target.fault = 'none';
      const effects = await effectCount(env, task as DrillTask);
      check(effects === 0, `a rejected task left ${effects} rows in ${env.effect.table}`);
      return `0 rows in ${env.effect.table}`;
    });
  },
};
