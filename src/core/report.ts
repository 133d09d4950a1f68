import type { Breach, ReportStatus, ThresholdMetric, Thresholds } from './thresholds.js';

/**
 * The report's numbers and the pure maths that turn per-biz-type SQL
 * aggregates into them. Over tasks *created* in the window: created, succeeded, failed, failure
 * rate, latency (updated_at − created_at of those that reached success). As of now, whatever the
 * window: due, stuck, failedOpen, oldestDueSeconds. A metric a profile cannot compute is null,
 * never 0, and `notes` says why.
 */
export interface ReportMetrics {
  created: number | null;
  succeeded: number | null;
  failed: number | null;
  failureRate: number | null;
  latencyAvgSeconds: number | null;
  latencyP95Seconds: number | null;
  due: number | null;
  stuck: number | null;
  failedOpen: number | null;
  oldestDueSeconds: number | null;
}

/** The percentile the report's latency names: p95, by the nearest-rank method (a value that was measured). */
export const LATENCY_PERCENTILE = 95;

/** One failed task, named in alerts so that nobody has to open the logs first (the classic task-table design). */
export interface FailureSample {
  id: number | string;
  bizId: string | null;
  eventId: string | null;
  /** The first line of last_error, shortened. */
  error: string | null;
  failedAt: string | null;
}

export interface BizTypeReport extends ReportMetrics {
  bizType: string | null;
  /** The most recent failed task of this biz type, for the failing ones. */
  sample: FailureSample | null;
}

/** `laravel-jobs`: a database queue's health per queue. */
export interface QueueReport {
  queue: string;
  /** Jobs waiting (not reserved), due or delayed. */
  backlog: number;
  due: number;
  reserved: number;
  /** Reservations older than retry_after: a worker died holding them. */
  staleReservations: number;
  /** Age of the oldest waiting job (created_at), seconds. */
  oldestJobSeconds: number | null;
}

/** One per-biz-type row of the window aggregate, as SQL returns it. */
export interface WindowRow {
  bizType: string | null;
  created: number;
  succeeded: number;
  failed: number;
  latencySum: number | null;
  latencyCount: number;
  latencyP95: number | null;
  /** The overall p95 lands in exactly one biz type's row; null elsewhere. */
  latencyP95All: number | null;
}

/** One per-biz-type count as of now (due, stuck, failed open), with the oldest due time. */
export interface NowRow {
  bizType: string | null;
  count: number;
  oldestEpoch?: number | null;
}

/** Which metrics a profile can compute at all (false → null in every row). */
export interface Capabilities {
  window: boolean;
  /** Failed-jobs tables: `failed` counts rows that failed in the window; created/succeeded are unknown. */
  failedInWindowOnly: boolean;
  latency: boolean;
  due: boolean;
  stuck: boolean;
  failedOpen: boolean;
}

export interface ReportInputs {
  nowEpoch: number;
  capabilities: Capabilities;
  window: WindowRow[];
  due: NowRow[];
  stuck: NowRow[];
  failedOpen: NowRow[];
}

/** failed ÷ created; null when nothing was created (a rate of an empty window is undefined, not 0). */
export function failureRate(failed: number | null, created: number | null): number | null {
  if (failed === null || created === null || created === 0) return null;
  return failed / created;
}

/** The mean of `count` values summing to `sum`; null when there are none. */
export function mean(sum: number | null, count: number): number | null {
  if (count === 0 || sum === null) return null;
  return sum / count;
}

/** The 1-based rank of the p-th percentile among n sorted values, by the nearest-rank method: ⌈p·n/100⌉. */
export function nearestRank(n: number, percentile: number = LATENCY_PERCENTILE): number {
  if (n <= 0) return 0;
  return Math.max(1, Math.ceil((percentile * n) / 100));
}

function emptyMetrics(c: Capabilities): ReportMetrics {
  const zero = (can: boolean): number | null => (can ? 0 : null);
  return {
    created: c.window && !c.failedInWindowOnly ? 0 : null,
    succeeded: c.window && !c.failedInWindowOnly ? 0 : null,
    failed: zero(c.window),
    failureRate: null,
    latencyAvgSeconds: null,
    latencyP95Seconds: null,
    due: zero(c.due),
    stuck: zero(c.stuck),
    failedOpen: zero(c.failedOpen),
    oldestDueSeconds: null,
  };
}

/** Combines the window aggregate and the as-of-now counts into overall and per-biz-type metrics. */
export function combineMetrics(inputs: ReportInputs): { metrics: ReportMetrics; byBizType: BizTypeReport[] } {
  const c = inputs.capabilities;
  const rows = new Map<string | null, BizTypeReport & { latencySum: number; latencyCount: number }>();
  const entry = (bizType: string | null) => {
    let e = rows.get(bizType);
    if (!e) {
      e = { bizType, ...emptyMetrics(c), sample: null, latencySum: 0, latencyCount: 0 };
      rows.set(bizType, e);
    }
    return e;
  };
  const overall = { ...emptyMetrics(c), latencySum: 0, latencyCount: 0 };
  const age = (epoch: number | null | undefined) =>
    epoch === null || epoch === undefined ? null : Math.max(0, inputs.nowEpoch - epoch);
  const add = (a: number | null, b: number) => (a === null ? null : a + b);

  if (c.window) {
    for (const row of inputs.window) {
      const e = entry(row.bizType);
      for (const target of [e, overall]) {
        target.created = add(target.created, row.created);
        target.succeeded = add(target.succeeded, row.succeeded);
        target.failed = add(target.failed, row.failed);
        target.latencySum += row.latencySum ?? 0;
        target.latencyCount += row.latencyCount;
      }
      if (c.latency) e.latencyP95Seconds = row.latencyP95;
      if (c.latency && row.latencyP95All !== null) overall.latencyP95Seconds = row.latencyP95All;
    }
  }
  const counted = (list: NowRow[], enabled: boolean, field: 'due' | 'stuck' | 'failedOpen') => {
    if (!enabled) return;
    for (const row of list) {
      const e = entry(row.bizType);
      e[field] = row.count;
      overall[field] = add(overall[field], row.count);
      if (field === 'due' && row.count > 0) {
        e.oldestDueSeconds = age(row.oldestEpoch);
        overall.oldestDueSeconds = maxOrNull(overall.oldestDueSeconds, e.oldestDueSeconds);
      }
    }
  };
  counted(inputs.due, c.due, 'due');
  counted(inputs.stuck, c.stuck, 'stuck');
  counted(inputs.failedOpen, c.failedOpen, 'failedOpen');

  const finish = <T extends ReportMetrics & { latencySum: number; latencyCount: number }>(
    m: T,
  ): ReportMetrics => {
    const { latencySum, latencyCount, ...rest } = m;
    const out: ReportMetrics = { ...rest };
    out.failureRate = failureRate(out.failed, out.created);
    out.latencyAvgSeconds = c.latency ? mean(latencySum, latencyCount) : null;
    if (!c.latency || latencyCount === 0) out.latencyP95Seconds = null;
    return out;
  };
  const byBizType = [...rows.values()]
    .map((e) => ({ bizType: e.bizType, ...finish(e), sample: e.sample }))
    .sort(
      (a, b) =>
        (b.failed ?? 0) - (a.failed ?? 0) ||
        (b.failedOpen ?? 0) - (a.failedOpen ?? 0) ||
        (b.created ?? 0) - (a.created ?? 0) ||
        String(a.bizType).localeCompare(String(b.bizType)),
    );
  return { metrics: finish(overall), byBizType };
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

/** The biz types worth naming in an alert: those with failures in the window or awaiting manual action, worst first. */
export function failingBizTypes(byBizType: readonly BizTypeReport[], limit: number): BizTypeReport[] {
  return byBizType.filter((b) => (b.failed ?? 0) > 0 || (b.failedOpen ?? 0) > 0).slice(0, limit);
}

/** The values thresholds read, from the overall metrics. */
export function thresholdValues(m: ReportMetrics): Record<ThresholdMetric, number | null> {
  return {
    failureRate: m.failureRate,
    failed: m.failed,
    stuck: m.stuck,
    oldestDue: m.oldestDueSeconds,
    due: m.due,
    failedOpen: m.failedOpen,
    latencyP95: m.latencyP95Seconds,
  };
}

/** Where the report's window starts and ends (epoch seconds, inclusive of both ends). */
export function windowBounds(
  nowEpoch: number,
  windowSeconds: number,
): { sinceEpoch: number; untilEpoch: number } {
  return { sinceEpoch: nowEpoch - windowSeconds, untilEpoch: nowEpoch };
}

export interface SourceRef {
  name: string;
  profile: string;
  table: string;
  db: string;
}

/** How a notification went, per webhook target. */
export interface NotificationOutcome {
  kind: string;
  /** The target with its token masked. */
  target: string;
  outcome: 'sent' | 'failed' | 'suppressed';
  /** Why: new, changed, recovered, repeat (cooldown over), cooldown, ok. */
  reason: string;
  httpStatus: number | null;
  error: string | null;
  bytes: number | null;
}

/** The JSON contract of `report`. */
export interface ReportResult {
  status: ReportStatus;
  source: SourceRef;
  now: string;
  window: { seconds: number; since: string; until: string };
  metrics: ReportMetrics;
  breaches: Breach[];
  thresholds: Thresholds;
  byBizType: BizTypeReport[];
  /** Only for queue tables (`laravel-jobs`). */
  byQueue?: QueueReport[];
  /** Why a metric is null, for humans and scripts alike. */
  notes: string[];
  notifications: NotificationOutcome[];
  /** With `sweeps:` rules: failures of the window the rules defer, and second failures (see `sweep`). */
  sweep?: { secondFailures: number; deferred: number };
}
