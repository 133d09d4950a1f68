import type { Context } from '../context.js';
import type { BoundSource } from '../db/bind-source.js';
import type { ShardSet } from '../ops/shards/set.js';
import { reportRequest, runReport, type FullReport } from '../verbs/report/index.js';

/** The overview's verdict: `report` as the command runs it (same thresholds, window, queues), sending nothing. */
export type VerdictSource = () => Promise<FullReport>;

/**
 * `report`'s whole run with the configured thresholds and window and no webhook: the verdict the
 * overview shows is the status `report` exits with. The config's thresholds are checked here, before
 * the console serves (bad ones: exit 3). On a sharded source, `report` over every shard.
 */
export function verdictSource(
  context: Context,
  source: BoundSource,
  stuckAfterMs: number,
  shards?: ShardSet,
): VerdictSource {
  const request = reportRequest({}, context.config.report ?? {}, source.profile.kind === 'failed-jobs');
  return () =>
    runReport({
      source,
      ...(shards ? { shards } : {}),
      config: context.config,
      request,
      stuckAfterMs,
      fullScan: false,
      warn: () => undefined,
    });
}
