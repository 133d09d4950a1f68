import { parseDuration } from './duration.js';
import { usageError } from './errors.js';

/**
 * Report thresholds: which metrics can breach, their defaults, how a
 * threshold is written in flags and config, and how metrics become OK / WARNING / CRITICAL.
 * Pure: no I/O, no clock.
 */
export const THRESHOLD_METRICS = [
  'failureRate',
  'failed',
  'stuck',
  'oldestDue',
  'due',
  'failedOpen',
  'latencyP95',
] as const;
export type ThresholdMetric = (typeof THRESHOLD_METRICS)[number];

export const LEVELS = ['warn', 'crit'] as const;
export type Level = (typeof LEVELS)[number];

export const STATUSES = ['OK', 'WARNING', 'CRITICAL'] as const;
export type ReportStatus = (typeof STATUSES)[number];

/** A metric's limits; undefined means "no limit at that level". Rates are fractions, ages seconds. */
export type Limits = Partial<Record<Level, number>>;
export type Thresholds = Record<ThresholdMetric, Limits>;

/** The classic task-table design: a failure rate over 1% means a systemic fault; 5% is an outage. */
export const DEFAULT_FAILURE_RATE_WARN = 0.01;
export const DEFAULT_FAILURE_RATE_CRIT = 0.05;
/** Any processing task whose lease expired is a worker that died: worth a look, not a page. */
export const DEFAULT_STUCK_WARN = 1;
/** The classic task-table design scans every minute and tolerates 5–10 min: a due task waiting 10 min means redrive is not running. */
export const DEFAULT_OLDEST_DUE_WARN_SECONDS = 600;

/**
 * A failed-job table (Laravel, think-queue) holds only jobs that gave up: one open row is a job no
 * worker will run again until a person retries or forgets it, so it is not "OK" by default.
 */
export const DEFAULT_FAILED_JOBS_OPEN_WARN = 1;

export const DEFAULT_THRESHOLDS: Thresholds = {
  failureRate: { warn: DEFAULT_FAILURE_RATE_WARN, crit: DEFAULT_FAILURE_RATE_CRIT },
  failed: {},
  stuck: { warn: DEFAULT_STUCK_WARN },
  oldestDue: { warn: DEFAULT_OLDEST_DUE_WARN_SECONDS },
  due: {},
  failedOpen: {},
  latencyP95: {},
};

/** The unit of each metric, which decides how its threshold is written. */
export const METRIC_UNIT: Record<ThresholdMetric, 'ratio' | 'count' | 'seconds'> = {
  failureRate: 'ratio',
  failed: 'count',
  stuck: 'count',
  oldestDue: 'seconds',
  due: 'count',
  failedOpen: 'count',
  latencyP95: 'seconds',
};

/** The report metric each threshold reads. */
export const METRIC_FIELD = {
  failureRate: 'failureRate',
  failed: 'failed',
  stuck: 'stuck',
  oldestDue: 'oldestDueSeconds',
  due: 'due',
  failedOpen: 'failedOpen',
  latencyP95: 'latencyP95Seconds',
} as const satisfies Record<ThresholdMetric, string>;

export function isThresholdMetric(value: string): value is ThresholdMetric {
  return (THRESHOLD_METRICS as readonly string[]).includes(value);
}

/**
 * Parses one threshold value for a metric: `5%` or `0.05` for a rate, a whole number for a count,
 * `10m`/`90s`/`600` for an age. `off` (or null) removes the limit. `what` names the flag or key.
 */
export function parseLimit(
  metric: ThresholdMetric,
  input: string | number | null,
  what: string,
): number | undefined {
  if (input === null || (typeof input === 'string' && /^(off|none)$/i.test(input.trim()))) return undefined;
  const text = String(input).trim();
  const unit = METRIC_UNIT[metric];
  if (unit === 'ratio') {
    const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(text);
    const value = percent
      ? Number(percent[1]) / 100
      : /^\d+(?:\.\d+)?$/.test(text)
        ? Number(text)
        : Number.NaN;
    if (!Number.isFinite(value) || value > 1) {
      throw usageError(
        `${what}: '${input}' is not a rate`,
        'Write a percentage such as 5% or a fraction such as 0.05 (at most 100%).',
      );
    }
    return value;
  }
  if (unit === 'count') {
    if (!/^\d+$/.test(text))
      throw usageError(`${what}: '${input}' is not a whole number`, 'Write a count such as 1 or 100.');
    return Number(text);
  }
  return parseDuration(input, what) / 1000;
}

/** Config `report.thresholds` as written (strings or numbers per metric and level). */
export type ThresholdsInput = Partial<
  Record<ThresholdMetric, Partial<Record<Level, string | number | null>>>
>;

/**
 * Defaults, then config, then flags (`metric.level=value`), each overriding only what it names.
 * `failedJobs`: the source is a failed-job table, whose open rows warn by default.
 */
export function resolveThresholds(
  config: ThresholdsInput | undefined,
  flags: readonly string[] = [],
  options: { failedJobs?: boolean } = {},
): Thresholds {
  const out = Object.fromEntries(
    THRESHOLD_METRICS.map((m) => [m, { ...DEFAULT_THRESHOLDS[m] }]),
  ) as Thresholds;
  if (options.failedJobs) out.failedOpen = { warn: DEFAULT_FAILED_JOBS_OPEN_WARN };
  for (const metric of THRESHOLD_METRICS) {
    const levels = config?.[metric];
    for (const level of LEVELS) {
      if (levels && level in levels) {
        setLimit(
          out[metric],
          level,
          parseLimit(metric, levels[level] ?? null, `report.thresholds.${metric}.${level}`),
        );
      }
    }
  }
  for (const flag of flags) {
    const match = /^([A-Za-z]+)\.(warn|crit)=(.+)$/.exec(flag.trim());
    const metric = match?.[1];
    if (!match || !metric || !isThresholdMetric(metric)) {
      throw usageError(
        `--threshold: '${flag}' is not METRIC.LEVEL=VALUE`,
        `METRIC is one of ${THRESHOLD_METRICS.join(', ')}; LEVEL is warn or crit; e.g. --threshold failureRate.crit=10% or --threshold oldestDue.warn=off.`,
      );
    }
    setLimit(
      out[metric],
      match[2] as Level,
      parseLimit(metric, match[3] as string, `--threshold ${metric}.${match[2]}`),
    );
  }
  return out;
}

function setLimit(limits: Limits, level: Level, value: number | undefined): void {
  if (value === undefined) delete limits[level];
  else limits[level] = value;
}

export interface Breach {
  metric: ThresholdMetric;
  level: Level;
  value: number;
  threshold: number;
}

/** A metric at or above its limit breaches it; crit wins over warn. A metric that is null never breaches. */
export function evaluate(
  values: Record<ThresholdMetric, number | null>,
  thresholds: Thresholds,
): { status: ReportStatus; breaches: Breach[] } {
  const breaches: Breach[] = [];
  for (const metric of THRESHOLD_METRICS) {
    const value = values[metric];
    if (value === null) continue;
    const { warn, crit } = thresholds[metric];
    if (crit !== undefined && value >= crit) breaches.push({ metric, level: 'crit', value, threshold: crit });
    else if (warn !== undefined && value >= warn)
      breaches.push({ metric, level: 'warn', value, threshold: warn });
  }
  const status: ReportStatus = breaches.some((b) => b.level === 'crit')
    ? 'CRITICAL'
    : breaches.length
      ? 'WARNING'
      : 'OK';
  return { status, breaches };
}

/** The exit code of a status: OK 0, WARNING 1, CRITICAL 2 (Nagios' convention; 3 is UNKNOWN, "could not run"). */
export const STATUS_EXIT: Record<ReportStatus, 0 | 1 | 2> = { OK: 0, WARNING: 1, CRITICAL: 2 };
