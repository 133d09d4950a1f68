import { effectCount, expectStatus, injectTask, observe, type DrillEnv, type DrillTask } from '../env.js';
import { diffDrillRun } from '../effect-check.js';
import { check, type Scenario } from '../../../core/drill-framework.js';

/**
 * The classic task-table design: the same event delivered twice — one after the other, and at the same
 * time — must change the business table once. Checked with the diff rule's table and key.
 */
export const duplicateDelivery: Scenario<DrillEnv> = {
  name: 'duplicate-delivery',
  summary: 'the same event twice, one after the other and at once: the effect exists exactly once',
  async run(steps, env) {
    let sequential: DrillTask | undefined;
    let concurrent: DrillTask | undefined;
    let raced: DrillTask | undefined;
    await steps.step('inject a task and redrive it: success, one effect', async () => {
      env.target.fault = 'none';
      sequential = await injectTask(env, 'duplicate-sequential');
      await env.system.redrivePass(env.target.url);
      expectStatus(await observe(env, sequential), 'success', 'after the first delivery');
      const effects = await effectCount(env, sequential);
      check(effects === 1, `the first delivery left ${effects} rows in ${env.effect.table}, expected 1`);
      return `task #${sequential.id} success; ${env.effect.table}.${env.effect.key} = ${sequential.bizId}: 1 row`;
    });
    await steps.step('deliver the same event again, after the first: the effect is still once', async () => {
      const t = sequential as DrillTask;
      const result = await env.system.deliver(t, env.target.url);
      check(
        result.outcome === 'success',
        `the handler answered the repeat with ${result.outcome}: ${result.error ?? ''}`,
      );
      const effects = await effectCount(env, t);
      check(
        effects === 1,
        `after a repeated delivery ${env.effect.table} has ${effects} rows for ${t.bizId}: the handler is not idempotent`,
      );
      return `2 deliveries of ${t.eventId}, handler answered success both times, 1 row`;
    });
    await steps.step(
      'deliver one event twice at the same time, then redrive it: the effect is once',
      async () => {
        concurrent = await injectTask(env, 'duplicate-concurrent');
        const t = concurrent;
        const results = await Promise.all([
          env.system.deliver(t, env.target.url),
          env.system.deliver(t, env.target.url),
        ]);
        check(
          results.every((r) => r.outcome === 'success'),
          `concurrent deliveries answered ${results.map((r) => r.outcome + (r.error ? ` (${r.error})` : '')).join(', ')}`,
        );
        const effects = await effectCount(env, t);
        check(
          effects === 1,
          `after two concurrent deliveries ${env.effect.table} has ${effects} rows for ${t.bizId}: the handler is not idempotent`,
        );
        // The queue's copy is still pending in the task table: the reconciliation job delivers it a third time.
        await env.system.redrivePass(env.target.url);
        expectStatus(await observe(env, t), 'success', 'after the redrive');
        const after = await effectCount(env, t);
        check(
          after === 1,
          `after a third delivery by redrive ${env.effect.table} has ${after} rows for ${t.bizId}`,
        );
        return `2 concurrent deliveries of ${t.eventId}, then redrive: success, 1 row`;
      },
    );
    await steps.step('two redrive workers at once: the task is claimed and delivered once', async () => {
      raced = await injectTask(env, 'duplicate-raced');
      const t = raced;
      const before = env.target.deliveriesOf(t.eventId);
      const passes = await Promise.all([
        env.system.redrivePass(env.target.url),
        env.system.redrivePass(env.target.url),
      ]);
      const claimed = passes.reduce((n, p) => n + p.claimed, 0);
      const delivered = env.target.deliveriesOf(t.eventId) - before;
      expectStatus(await observe(env, t), 'success', 'after two concurrent passes');
      check(delivered === 1, `two concurrent redrive passes delivered the task ${delivered} times`);
      check(claimed === 1, `two concurrent redrive passes claimed the task ${claimed} times`);
      const effects = await effectCount(env, t);
      check(effects === 1, `${env.effect.table} has ${effects} rows for ${t.bizId}`);
      return `claimed 1×, delivered 1×, 1 row`;
    });
    await steps.step(
      'diff by the rule finds no duplicate, missing or orphan effect for the run',
      async () => {
        const diff = await diffDrillRun(env);
        const { duplicate, missing, orphan } = diff.findings;
        check(duplicate === 0, `diff finds ${duplicate} duplicated effects: ${diff.samples.join('; ')}`);
        check(
          missing === 0,
          `diff finds ${missing} successful tasks without their effect: ${diff.samples.join('; ')}`,
        );
        check(orphan === 0, `diff finds ${orphan} business rows with no task: ${diff.samples.join('; ')}`);
        check(
          diff.tasksChecked >= 3,
          `diff checked ${diff.tasksChecked} tasks of the run, expected at least the 3 delivered here`,
        );
        return `diff over ${diff.tasksChecked} tasks of the run against ${env.effect.table}.${env.effect.key} (exactly-one): 0 duplicate, 0 missing, 0 orphan`;
      },
    );
  },
};
