import { closedLoopbackUrl, startSilentListener } from '../dead-targets.js';
import {
  effectCount,
  expectStatus,
  fastForward,
  injectTask,
  observe,
  seconds,
  type DrillEnv,
  type DrillTask,
} from '../env.js';
import { check, type Scenario, type StepRecorder } from '../../../core/drill-framework.js';

/**
 * The classic task-table design: point the task at a target that is not there and watch it go processing →
 * retry → … → failed, every retry scheduled as the policy says; then restore the target,
 * compensate by hand, and see success and the audit row. Two dead targets, both on loopback:
 * a closed port (connection refused) and a listener that accepts and never answers (timeout).
 */
/** More retries than this is a policy that never gives up in practice: the drill refuses it. */
export const MAX_SANE_RETRIES = 25;

export const unreachableTarget: Scenario<DrillEnv> = {
  name: 'unreachable-target',
  summary: 'refused and silent targets: every retry per the policy, then failed; compensated to success',
  async run(steps, env) {
    await steps.step('the retry policy backs off and gives up', async () => {
      const { maxRetries } = env.policy;
      check(
        maxRetries <= MAX_SANE_RETRIES,
        `the policy allows ${maxRetries} retries: a task that keeps failing must end failed for a human (the classic task-table design: 7)`,
      );
      for (let retry = 1; retry <= maxRetries; retry++) {
        const window = env.policy.window(retry);
        check(
          window.minSeconds >= 1,
          `retry ${retry} waits ${seconds(window.minSeconds)}: a dead target would be hammered with no backoff`,
        );
      }
      return env.policy.describe;
    });
    const refusedUrl = await closedLoopbackUrl();
    const silent = await startSilentListener();
    try {
      const refused = await retriesUntilFailed(
        steps,
        env,
        'refused',
        refusedUrl,
        'connection refused on a closed loopback port',
      );
      const hung = await retriesUntilFailed(
        steps,
        env,
        'silent',
        silent.url,
        'a loopback listener that never answers',
      );
      await compensateToSuccess(
        steps,
        env,
        [refused, hung].filter((t): t is DrillTask => t !== undefined),
      );
    } finally {
      await silent.close();
    }
  },
};

async function retriesUntilFailed(
  steps: StepRecorder,
  env: DrillEnv,
  tag: string,
  url: string,
  what: string,
): Promise<DrillTask | undefined> {
  let task: DrillTask | undefined;
  await steps.step(`${tag}: inject a task whose target is ${what}`, async () => {
    task = await injectTask(env, `unreachable-${tag}`);
    return `task #${task.id} ${task.eventId} → ${url}; policy: ${env.policy.describe}`;
  });
  // A policy past the sane bound has already failed its step; its retries are listed up to the bound only.
  const maxRetries = Math.min(env.policy.maxRetries, MAX_SANE_RETRIES + 1);
  for (let retry = 1; retry <= maxRetries; retry++) {
    await steps.step(
      `${tag}: attempt ${retry} fails and retry ${retry} is scheduled per the policy`,
      async () => {
        const t = task as DrillTask;
        const before = await env.source.db.nowEpoch();
        await env.system.redrivePass(url);
        const after = await env.source.db.nowEpoch();
        const row = await observe(env, t);
        expectStatus(row, 'pending', `after attempt ${retry}`);
        check(
          row.attempts === retry,
          `after attempt ${retry} the task counts ${row.attempts} attempts, expected ${retry}`,
        );
        check(row.nextRetryEpoch !== null, `retry ${retry} has no next_retry_time`);
        const window = env.policy.window(retry);
        // Stored times have whole seconds: allow one second either side of the pass.
        const earliest = before + window.minSeconds - 1;
        const latest = after + window.maxSeconds + 1;
        // The wait as the row shows it: from the failure's write (updated_at) to the next retry.
        const wait = row.nextRetryEpoch - (row.updatedEpoch ?? before);
        check(
          row.nextRetryEpoch >= earliest && row.nextRetryEpoch <= latest,
          `retry ${retry} is due ${seconds(wait)} after the failure; the policy says ${seconds(window.minSeconds)}–${seconds(window.maxSeconds)}`,
        );
        let early = '';
        // Only when the retry is a few seconds out, so a slow machine cannot make it due during the check.
        if (row.nextRetryEpoch > (await env.source.db.nowEpoch()) + 3) {
          await env.system.redrivePass(url);
          const again = await observe(env, t);
          check(
            again.attempts === retry && again.status === 'pending',
            `retry ${retry} ran before it was due (attempts now ${again.attempts})`,
          );
          early = '; not retried early';
        }
        await fastForward(env, t);
        return `${row.lastError ?? 'no error recorded'}; retry ${retry} due in ${seconds(wait)} (policy ${seconds(window.minSeconds)}–${seconds(window.maxSeconds)})${early}; fast-forwarded`;
      },
    );
  }
  await steps.step(
    `${tag}: attempt ${maxRetries + 1} fails and the task is failed after ${maxRetries} retries`,
    async () => {
      const t = task as DrillTask;
      await env.system.redrivePass(url);
      const row = await observe(env, t);
      check(
        row.status !== 'pending',
        `the task is still pending after ${maxRetries + 1} attempts (next retry ${row.nextRetryAt}): no maximum of attempts is enforced`,
      );
      expectStatus(row, 'failed', `after attempt ${maxRetries + 1}`);
      check(
        row.attempts === maxRetries + 1 || row.attempts === maxRetries,
        `the failed task counts ${row.attempts} attempts`,
      );
      check((await effectCount(env, t)) === 0, 'an unreachable target left a business effect');
      return `failed with ${row.attempts} attempts; last error: ${row.lastError ?? 'none'}`;
    },
  );
  return task;
}

async function compensateToSuccess(steps: StepRecorder, env: DrillEnv, tasks: DrillTask[]): Promise<void> {
  await steps.step('restore the target and compensate: manual retry of the failed tasks', async () => {
    env.target.fault = 'none';
    const moved = await env.system.manualRetry(
      tasks.map((t) => t.id),
      `drill ${env.runId}: target restored`,
    );
    check(
      moved === tasks.length,
      `compensate moved ${moved} of ${tasks.length} failed tasks back to pending`,
    );
    for (const t of tasks) expectStatus(await observe(env, t), 'pending', 'after the manual retry');
    return `${moved} tasks back to pending through compensate --action retry`;
  });
  await steps.step('redrive delivers them to the restored target: success, effect once', async () => {
    await env.system.redrivePass(env.target.url);
    const details: string[] = [];
    for (const t of tasks) {
      expectStatus(await observe(env, t), 'success', 'after the redrive');
      const effects = await effectCount(env, t);
      check(
        effects === 1,
        `task #${t.id} left ${effects} business rows in ${env.effect.table}, expected exactly one`,
      );
      details.push(`#${t.id} success, 1 row`);
    }
    return details.join('; ');
  });
  await steps.step('the audit log records the manual retry', async () => {
    const details: string[] = [];
    for (const t of tasks) {
      const rows = await env.system.auditOf(t.id);
      const retry = rows.find((r) => r.fromStatus === 'failed' && r.toStatus === 'pending');
      check(retry, `no audit row records task #${t.id} going failed → pending (found ${rows.length} rows)`);
      details.push(`#${t.id}: ${retry.action} failed → pending by ${retry.operator}`);
    }
    return details.join('; ');
  });
}
