import {
  effectCount,
  expectStatus,
  expireLease,
  injectTask,
  observe,
  seconds,
  type DrillEnv,
  type DrillTask,
} from '../env.js';
import { check, type Scenario } from '../../../core/drill-framework.js';

/**
 * The classic task-table design's example: a worker delivers the task (the effect happens) and dies before it
 * records success. The row stays processing; once its lease has expired the reconciliation job
 * finds it stuck and re-drives it — and the effect must still exist once.
 */
export const workerCrash: Scenario<DrillEnv> = {
  name: 'worker-crash',
  summary: 'claimed, delivered, worker died: stuck after the lease, re-driven, effect once',
  async run(steps, env) {
    let task: DrillTask | undefined;
    await steps.step('a worker claims and delivers a task, then dies before recording it', async () => {
      env.target.fault = 'none';
      task = await injectTask(env, 'worker-crash');
      const result = await env.system.claimDeliverAndDie(task, env.target.url);
      check(result.outcome === 'success', `the handler answered ${result.outcome}: ${result.error ?? ''}`);
      expectStatus(await observe(env, task), 'processing', 'after the crash');
      return `task #${task.id} left processing; the handler applied it (${await effectCount(env, task)} row)`;
    });
    await steps.step('while its lease lasts, redrive leaves it alone', async () => {
      const t = task as DrillTask;
      const before = env.target.deliveriesOf(t.eventId);
      await env.system.redrivePass(env.target.url);
      expectStatus(await observe(env, t), 'processing', 'within the lease');
      const delivered = env.target.deliveriesOf(t.eventId) - before;
      check(
        delivered === 0,
        `a task still in its lease was delivered again (${delivered}×): another worker may be running it`,
      );
      return `still processing, not delivered again (lease ${seconds(env.leaseMs / 1000)})`;
    });
    await steps.step('after the lease it is found stuck and re-driven: success', async () => {
      const t = task as DrillTask;
      await expireLease(env, t);
      const pass = await env.system.redrivePass(env.target.url);
      const row = await observe(env, t);
      check(
        row.status !== 'processing',
        `the task is still processing after its lease expired: stuck tasks are not recovered`,
      );
      expectStatus(row, 'success', 'after recovery');
      return `lease fast-forwarded; recovered ${pass.recoveredStuck}, now success (attempts ${row.attempts})`;
    });
    await steps.step('the effect exists once', async () => {
      const t = task as DrillTask;
      const effects = await effectCount(env, t);
      check(
        effects === 1,
        `${env.effect.table} has ${effects} rows for ${t.bizId} after the re-drive: the handler is not idempotent`,
      );
      return `${env.target.deliveriesOf(t.eventId)} deliveries, 1 row`;
    });
  },
};
