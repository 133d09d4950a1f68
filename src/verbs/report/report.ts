import {
  combineMetrics,
  failingBizTypes,
  thresholdValues,
  windowBounds,
  type Capabilities,
  type NowRow,
  type QueueReport,
  type ReportResult,
  type WindowRow,
} from '../../core/report.js';
import { evaluate, type Thresholds } from '../../core/thresholds.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, type CountRow, type LatencyBucketRow } from '../../db/port/index.js';
import { toIso } from '../../db/task-sql.js';
import { capabilityNotes, sourceInfo } from '../../ops/task-lists.js';
import { planFigures, REPORT_FIGURES, type FigurePlan } from '../../ops/full-scan.js';

export interface ReportOptions {
  /** The database's now, read once per run: every cutoff derives from it. */
  nowEpoch: number;
  windowSeconds: number;
  stuckAfterMs: number;
  bizTypes?: string[];
  thresholds: Thresholds;
  /** How many failing biz types get a sample task (one small query each). */
  samples?: number;
  /**
   * false: on a large table, hold back the figures no index serves (and say so); true: read the
   * whole table for them. Undefined computes every figure without asking.
   */
  fullScan?: boolean;
}

/** Failing biz types named with a sample in the report and its alerts. */
export const DEFAULT_SAMPLES = 5;

/** What the profile can compute, and why not where it cannot (null with a reason, never 0). */
export function reportCapabilities(source: BoundSource): { capabilities: Capabilities; notes: string[] } {
  const { sql, profile } = source;
  const statuses = sql.statuses();
  const scanNotes = capabilityNotes(source);
  const notes: string[] = [];
  const failedJobs = profile.kind === 'failed-jobs';
  const queueJobs = profile.kind === 'queue-jobs';
  let window = sql.has('createdAt') && statuses.includes('success') && statuses.includes('failed');
  if (failedJobs) {
    window = sql.has('updatedAt');
    notes.push(
      `${profile.name} holds only failed jobs: failed counts jobs that failed in the window; created, succeeded, failure rate and latency are n/a`,
    );
  } else if (queueJobs) {
    notes.push(
      `${profile.name} deletes jobs when they finish: created, succeeded, failed, failure rate and latency are n/a (see byQueue, and report the failed_jobs table for failures)`,
    );
  } else if (!sql.has('createdAt')) {
    notes.push(
      `${profile.name} has no created_at column: created, succeeded, failed, failure rate and latency are n/a`,
    );
  } else if (!window) {
    notes.push(
      `${profile.name} maps no success or failed status: created, succeeded, failed and failure rate are n/a`,
    );
  }
  const latency = window && !failedJobs && sql.has('updatedAt');
  if (window && !failedJobs && !latency)
    notes.push(`${profile.name} has no updated_at column: latency is n/a`);
  if (scanNotes.due) notes.push(scanNotes.due.replace('due is n/a', 'due and oldest due are n/a'));
  if (scanNotes.stuck) notes.push(scanNotes.stuck);
  const failedOpen = statuses.includes('failed');
  if (!failedOpen) notes.push(`${profile.name} rows are never failed: failedOpen is n/a`);
  return {
    capabilities: {
      window,
      failedInWindowOnly: failedJobs,
      latency,
      due: !scanNotes.due,
      stuck: !scanNotes.stuck,
      failedOpen,
    },
    notes,
  };
}

const toNow = (rows: CountRow[]): NowRow[] =>
  rows.map((r) => ({ bizType: r.bizType, count: r.count, oldestEpoch: r.oldestEpoch }));

/** What one source's statements return for a report, before they are combined into metrics. */
export interface ReportInputRows {
  capabilities: Capabilities;
  notes: string[];
  skipped: string[];
  window: WindowRow[];
  due: NowRow[];
  stuck: NowRow[];
  failedOpen: NowRow[];
  byQueue?: QueueReport[];
  /** Only when asked (sharded sources): the latency histogram, whose percentiles merge. */
  histogram?: LatencyBucketRow[];
}

/**
 * The report's statements on one source, in parallel, against one fixed "now"; none loads the
 * window's rows. `histogram` adds the latency histogram (sharded sources merge percentiles by it).
 */
export async function reportInputs(
  source: BoundSource,
  options: ReportOptions,
  histogram = false,
  given?: FigurePlan,
): Promise<ReportInputRows> {
  const { capabilities: c, notes } = reportCapabilities(source);
  const { sinceEpoch, untilEpoch } = windowBounds(options.nowEpoch, options.windowSeconds);
  // The window includes "now": created_at ≤ now, i.e. < now + 1 for whole seconds.
  const windowFilter = { bizTypes: options.bizTypes, sinceEpoch, untilEpoch: untilEpoch + 1 };
  const nowFilter = { bizTypes: options.bizTypes };
  const stuckCutoff = options.nowEpoch - Math.floor(options.stuckAfterMs / 1000);
  const plan =
    given ??
    (options.fullScan === undefined
      ? undefined
      : await planFigures(source, nowFilter, options.fullScan, REPORT_FIGURES));
  if (plan) {
    if (!plan.computes.window) c.window = false;
    if (!plan.computes.due) c.due = c.stuck = c.failedOpen = false;
    notes.push(...plan.notes);
  }
  const none: Promise<never[]> = Promise.resolve([]);
  const [window, due, stuck, failedOpen, byQueue, buckets] = await Promise.all([
    !c.window
      ? none
      : c.failedInWindowOnly
        ? store.tasks.failedInWindow(source, windowFilter)
        : store.tasks.windowAggregate(source, windowFilter, c.latency),
    c.due ? store.tasks.countDue(source, nowFilter, options.nowEpoch).then(toNow) : none,
    c.stuck ? store.tasks.countStuck(source, nowFilter, stuckCutoff).then(toNow) : none,
    c.failedOpen ? store.tasks.countFailedOpen(source, nowFilter) : none,
    source.profile.kind === 'queue-jobs'
      ? store.tasks.queueHealth(source, options.nowEpoch, stuckCutoff)
      : undefined,
    histogram && c.window && c.latency && !c.failedInWindowOnly
      ? store.tasks.latencyHistogram(source, windowFilter)
      : undefined,
  ]);
  return {
    capabilities: c,
    notes,
    skipped: plan?.skipped ?? [],
    window: window as WindowRow[],
    due,
    stuck,
    failedOpen,
    ...(byQueue ? { byQueue: byQueue as QueueReport[] } : {}),
    ...(buckets ? { histogram: buckets } : {}),
  };
}

/**
 * The report: metrics over the window and as of now, overall and per biz type, thresholds applied.
 */
export async function buildReport(
  source: BoundSource,
  options: ReportOptions,
): Promise<Omit<ReportResult, 'notifications'>> {
  const rows = await reportInputs(source, options);
  const { metrics, byBizType } = combineMetrics({ nowEpoch: options.nowEpoch, ...rows });
  const failing = failingBizTypes(byBizType, options.samples ?? DEFAULT_SAMPLES);
  const samples = await Promise.all(failing.map((b) => store.tasks.latestFailure(source, b.bizType)));
  failing.forEach((b, i) => (b.sample = samples[i] ?? null));
  return finishReport(sourceInfo(source), options, metrics, byBizType, rows);
}

/** Thresholds applied and the result put together (one source, or every shard of one). */
export function finishReport(
  source: ReportResult['source'],
  options: ReportOptions,
  metrics: ReportResult['metrics'],
  byBizType: ReportResult['byBizType'],
  rows: Pick<ReportInputRows, 'notes' | 'skipped' | 'byQueue'>,
): Omit<ReportResult, 'notifications'> {
  const { sinceEpoch, untilEpoch } = windowBounds(options.nowEpoch, options.windowSeconds);
  const { status, breaches } = evaluate(thresholdValues(metrics), options.thresholds);
  const result: Omit<ReportResult, 'notifications'> = {
    status,
    source,
    now: toIso(options.nowEpoch) as string,
    window: {
      seconds: options.windowSeconds,
      since: toIso(sinceEpoch) as string,
      until: toIso(untilEpoch) as string,
    },
    metrics,
    breaches,
    thresholds: options.thresholds,
    byBizType,
    notes: rows.notes,
  };
  if (rows.byQueue) result.byQueue = rows.byQueue;
  if (!rows.skipped.length) return result;
  // Fields may be added to the report's JSON: which figures were held back.
  const withSkipped: typeof result & { skipped: string[] } = { ...result, skipped: rows.skipped };
  return withSkipped;
}
