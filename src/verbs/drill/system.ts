import { RetryPolicies, type RetryPolicy } from '../../core/backoff.js';
import { store } from '../../db/port/index.js';
import { HttpDispatcher } from '../../dispatch/http.js';
import { registryOf } from '../../dispatch/registry.js';
import type { Dispatcher, DispatchResult } from '../../dispatch/types.js';
import { runRedrive } from '../redrive/index.js';
import { manualRetry } from './manual-retry.js';
import type { DrillEnv, DrillSystem, DrillTask } from './env.js';
import { check } from '../../core/drill-framework.js';

/** Operator name the drill's manual actions are audited under. */
export const DRILL_OPERATOR = 'taskrecon-drill';

export interface SystemOptions {
  /** The policy redrive runs with (the drill checks against env.policy). */
  policy: RetryPolicy;
  wrapDispatcher?: (dispatcher: Dispatcher) => Dispatcher;
}

/**
 * The drill's handle on taskrecon's own machinery, called in-process: `runRedrive` for passes of
 * the reconciliation job, the http dispatcher for direct deliveries, `claimBatch` for a worker that
 * dies after delivering, and compensate's manual retry. Every claim is filtered by the run's own
 * biz type, so no pass can take a row the drill did not write.
 */
export function buildDrillSystem(env: Omit<DrillEnv, 'system'>, options: SystemOptions): DrillSystem {
  const dispatchers = new Map<string, Dispatcher>();
  const dispatcherFor = (url: string): Dispatcher => {
    let dispatcher = dispatchers.get(url);
    if (!dispatcher) {
      const http = new HttpDispatcher({ url, timeoutMs: env.timeoutMs, connections: 8 });
      dispatcher = options.wrapDispatcher ? options.wrapDispatcher(http) : http;
      dispatchers.set(url, dispatcher);
    }
    return dispatcher;
  };
  const policies = new RetryPolicies(new Map([[env.bizType, options.policy]]), options.policy);
  const leaseSeconds = Math.max(1, Math.round(env.leaseMs / 1000));
  const signal = new AbortController().signal;

  const dispatch = (task: DrillTask, url: string, attempt: number): Promise<DispatchResult> =>
    dispatcherFor(url).dispatch(
      {
        id: task.id,
        bizType: env.bizType,
        bizId: task.bizId,
        eventId: task.eventId,
        payload: JSON.parse(task.payload) as unknown,
        payloadText: task.payload,
        attempt,
      },
      { signal },
    );

  return {
    async redrivePass(url) {
      const result = await runRedrive(env.source, {
        batch: 50,
        pauseMs: 0,
        concurrency: 4,
        leaseSeconds,
        stuckAfterMs: env.leaseMs,
        bizTypes: [env.bizType],
        dryRun: false,
        dispatchers: registryOf({ [env.bizType]: dispatcherFor(url) }),
        policies,
      });
      return result;
    },

    deliver(task, url) {
      return dispatch(task, url, 1);
    },

    async claimDeliverAndDie(task, url) {
      const now = await env.source.db.nowEpoch();
      const batch = await store.tasks.claimBatch(env.source, {
        kind: 'due',
        limit: 1,
        cutoffEpoch: now,
        stuckCutoffEpoch: now - leaseSeconds,
        leaseSeconds,
        bizTypes: [env.bizType],
        skipLocked: false,
      });
      const claimed = batch.tasks[0];
      check(claimed && String(claimed.id) === String(task.id), `the worker could not claim task #${task.id}`);
      // The worker delivers, then dies: its outcome is never recorded and its claim never released.
      return dispatch(task, url, claimed.attempts + 1);
    },

    manualRetry(ids, reason) {
      return manualRetry(env.source, ids, {
        operator: DRILL_OPERATOR,
        reason,
        runId: `drill-${env.runId}`,
        bizType: env.bizType,
      });
    },

    async auditOf(id) {
      const rows = await store.audit.selectLatest(
        env.source.db,
        env.source.db.dialect,
        { taskIds: [String(id)] },
        50,
      );
      return rows
        .filter((r) => r.taskTable === env.source.profile.table)
        .map((r) => ({
          action: r.action,
          fromStatus: r.fromStatus,
          toStatus: r.toStatus,
          operator: r.operator,
        }));
    },

    async close() {
      await Promise.allSettled([...dispatchers.values()].map((d) => d.close?.()));
    },
  };
}
