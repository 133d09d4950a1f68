import type { TaskreconConfig } from '../../config/schema.js';
import { RetryPolicies } from '../../core/backoff.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { registryFromConfig } from '../../dispatch/registry.js';
import { usageError } from '../../errors.js';
import {
  assertRedrivable,
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_SECONDS,
  runRedrive,
} from '../../ops/redrive/redrive.js';

/**
 * `compensate --action retry --now`: the tasks just sent back to pending are claimed and run at once
 * through their biz type's handler, exactly as `redrive` would run them (fenced claims, the retry
 * policy, guarded outcomes), instead of waiting for the next redrive. Only the retried ids are claimed.
 */
export interface DispatchedNow {
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  lostRace: number;
}

/** Ids per redrive run (an IN list per claim). */
const IDS_PER_RUN = 1000;

/** Checks, before anything is written, that the retried tasks could be run: a task table with handlers. */
export function checkDispatchable(source: BoundSource, config: TaskreconConfig): void {
  if (source.profile.kind === 'failed-jobs') {
    throw usageError(
      '--now is for task tables: a failed job is re-pushed onto its queue at once by --action retry already',
    );
  }
  if (source.profile.kind === 'job-system') {
    throw usageError(
      `--now is for task tables: ${source.profile.name}'s own workers run the jobs --action retry sends back`,
    );
  }
  assertRedrivable(source);
  const registry = registryFromConfig(config.handlers, undefined, config.brokers);
  const usable = registry.hasDefault || registry.bizTypes.length > 0;
  void registry.close();
  if (!usable) {
    throw usageError(
      '--now needs handlers to run the tasks with, and none are configured',
      'Add `handlers:` to taskrecon.config.yaml (per biz type or `default:`), or leave --now out and let redrive run them.',
    );
  }
}

export async function dispatchNow(
  source: BoundSource,
  ids: readonly TaskId[],
  config: TaskreconConfig,
  stuckAfterMs: number,
): Promise<DispatchedNow> {
  const total: DispatchedNow = { claimed: 0, succeeded: 0, retried: 0, failed: 0, lostRace: 0 };
  const dispatchers = registryFromConfig(config.handlers, undefined, config.brokers);
  const policies = RetryPolicies.fromConfig(config.retry);
  try {
    for (let i = 0; i < ids.length; i += IDS_PER_RUN) {
      const result = await runRedrive(source, {
        batch: IDS_PER_RUN,
        pauseMs: 0,
        concurrency: DEFAULT_CONCURRENCY,
        leaseSeconds: DEFAULT_LEASE_SECONDS,
        stuckAfterMs,
        dryRun: false,
        dispatchers,
        policies,
        ids: ids.slice(i, i + IDS_PER_RUN) as TaskId[],
      });
      for (const key of Object.keys(total) as Array<keyof DispatchedNow>) total[key] += result[key];
    }
  } finally {
    await dispatchers.close();
  }
  return total;
}
