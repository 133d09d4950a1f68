import { failingBizTypes, type ReportMetrics, type ReportResult } from '../core/report.js';
import { formatSeconds } from '../core/duration.js';
import { describeBreach, firstLine, formatMetric } from '../core/report-text.js';
import type { Limits, ThresholdMetric } from '../core/thresholds.js';

export { describeBreach, firstLine, formatMetric } from '../core/report-text.js';

/**
 * The report as a Nagios/Icinga plugin prints it: one status line, ` | ` and performance data
 * (`label=value[UOM];warn;crit;min;max`, `U` for a value the profile cannot compute), then the
 * failing biz types on the following lines. The exit code (0/1/2, 3 UNKNOWN) is the command's.
 */
const PERF: Array<[keyof ReportMetrics, string, ThresholdMetric | undefined, 's' | '']> = [
  ['created', 'created', undefined, ''],
  ['succeeded', 'succeeded', undefined, ''],
  ['failed', 'failed', undefined, ''],
  ['failureRate', 'failure_rate', 'failureRate', ''],
  ['latencyAvgSeconds', 'latency_avg', undefined, 's'],
  ['latencyP95Seconds', 'latency_p95', 'latencyP95', 's'],
  ['due', 'due', 'due', ''],
  ['stuck', 'stuck', 'stuck', ''],
  ['failedOpen', 'failed_open', 'failedOpen', ''],
  ['oldestDueSeconds', 'oldest_due', 'oldestDue', 's'],
];

const round = (n: number): string => String(Math.round(n * 1e6) / 1e6);

function perfdata(metrics: ReportMetrics, thresholds: Record<ThresholdMetric, Limits>): string {
  return PERF.map(([field, label, metric, uom]) => {
    const value = metrics[field];
    const limits = metric ? thresholds[metric] : {};
    const max = field === 'failureRate' ? '1' : '';
    const v = value === null ? 'U' : `${round(value)}${uom}`;
    return `${label}=${v};${limits.warn ?? ''};${limits.crit ?? ''};0;${max}`.replace(/;+$/, '');
  }).join(' ');
}

function summaryText(report: Omit<ReportResult, 'notifications'>): string {
  if (report.breaches.length) return report.breaches.map(describeBreach).join(', ');
  const m = report.metrics;
  const parts: string[] = [];
  if (m.created !== null) parts.push(`${m.created} created in ${formatSeconds(report.window.seconds)}`);
  if (m.failureRate !== null) parts.push(`failure rate ${formatMetric('failureRate', m.failureRate)}`);
  else if (m.failed !== null) parts.push(`${m.failed} failed`);
  if (m.latencyP95Seconds !== null) parts.push(`p95 ${formatSeconds(m.latencyP95Seconds)}`);
  if (m.stuck !== null) parts.push(`${m.stuck} stuck`);
  if (m.due !== null)
    parts.push(
      `${m.due} due${m.oldestDueSeconds !== null ? ` (oldest ${formatSeconds(m.oldestDueSeconds)})` : ''}`,
    );
  return parts.join(', ') || 'no metrics';
}

export function renderNagios(report: Omit<ReportResult, 'notifications'>): string {
  const line = `TASKRECON ${report.status} - ${report.source.name}: ${summaryText(report)} | ${perfdata(report.metrics, report.thresholds)}`;
  const details = failingBizTypes(report.byBizType, 5).map((b) => {
    const sample = b.sample
      ? `; e.g. biz_id=${b.sample.bizId ?? '-'} event_id=${b.sample.eventId ?? '-'}: ${firstLine(b.sample.error)}`
      : '';
    return `${b.bizType ?? '(none)'}: ${b.failed ?? 'n/a'} failed in window, ${b.failedOpen ?? 'n/a'} awaiting action${sample}`;
  });
  return [line, ...details].join('\n');
}
