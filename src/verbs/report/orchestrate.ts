import type { TaskreconConfig } from '../../config/schema.js';
import type { ReportResult } from '../../core/report.js';
import { STATUS_EXIT } from '../../core/thresholds.js';
import type { BoundSource } from '../../db/bind-source.js';
import { unknownBizTypeWarnings } from '../../ops/biz-type-check.js';
import { activeAcks } from '../../ops/acks.js';
import { reportQueues, type QueueReportSection } from '../../ops/queue-report.js';
import { sweepCounts, sweepFigures } from '../../ops/sweep/figures.js';
import { notifyReport } from './notify.js';
import { buildReport } from './report.js';
import { buildShardReport, shardSweepCounts, shardTrend, type ShardReportEntry } from './shards.js';
import type { ShardSet } from '../../ops/shards/set.js';
import { checkReportSource, type ReportRequest } from './request.js';
import { reportTrend } from './trend.js';

/** A whole `report` run as the command and the console ask for it. */
export interface ReportRun {
  /** The source; for a sharded one, its first shard (taskrecon's own tables: notifications, acks). */
  source: BoundSource;
  /** A sharded source: every shard is read and merged (the trend and the sweep figures too). */
  shards?: ShardSet;
  config: TaskreconConfig;
  /** The checked inputs (see reportRequest). */
  request: ReportRequest;
  bizTypes?: string[];
  stuckAfterMs: number;
  fullScan: boolean;
  /** --trend: the span of the trend series, if one is wanted. */
  trend?: string;
  /** Told each warning worth a line (unknown biz types, a webhook that failed). */
  warn: (line: string) => void;
}

export type FullReport = ReportResult & {
  queues?: QueueReportSection;
  shards?: ShardReportEntry[];
  missingShards?: string[];
};

/**
 * `report`: the metrics against their thresholds, the notifications they call for, the sweep's
 * figures, the brokers' queues and the trend, as one result whose status is the worst of them.
 */
export async function runReport(run: ReportRun): Promise<FullReport> {
  const { source, request } = run;
  checkReportSource(source, run.bizTypes);
  for (const warning of await unknownBizTypeWarnings(source, run.bizTypes)) run.warn(warning);
  const options = {
    windowSeconds: Math.round(request.windowMs / 1000),
    stuckAfterMs: run.stuckAfterMs,
    bizTypes: run.bizTypes,
    thresholds: request.thresholds,
    fullScan: run.fullScan,
  };
  const report = run.shards
    ? await buildShardReport(run.shards, options)
    : await buildReport(source, { ...options, nowEpoch: await source.db.nowEpoch() });
  const nowEpoch = Math.round(Date.parse(report.now) / 1000);
  const notifications = await notifyReport(source.db, report, {
    targets: request.targets,
    cooldownSeconds: request.cooldownSeconds,
    nowEpoch,
  });
  for (const n of notifications)
    if (n.outcome === 'failed') run.warn(`webhook ${n.kind} ${n.target} failed: ${n.error}`);
  const windowSeconds = Math.round(request.windowMs / 1000);
  const sweep = run.shards
    ? await shardSweepCounts(run.shards, run.config, windowSeconds)
    : await sweepFigures(source, run.config, windowSeconds).then((f) => (f ? sweepCounts(f) : null));
  const queues = run.config.brokers
    ? await reportQueues(run.config, undefined, await activeAcks(source.db))
    : undefined;
  const trend = !run.trend
    ? undefined
    : run.shards
      ? await shardTrend(run.shards, run.trend, nowEpoch)
      : await reportTrend(source, run.trend, nowEpoch);
  const result: FullReport = {
    ...report,
    ...(sweep ? { sweep } : {}),
    ...(queues ? { queues } : {}),
    ...(trend ? { trend } : {}),
    notifications,
  };
  if (queues && STATUS_EXIT[queues.status] > STATUS_EXIT[result.status]) result.status = queues.status;
  return result;
}
