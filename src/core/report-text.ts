import { formatSeconds } from './duration.js';
import { METRIC_UNIT, type Breach, type ThresholdMetric } from './thresholds.js';

/** The words of a report's breaches, shared by the Nagios line and the webhook alerts. Pure text, no colour. */

/** A threshold or metric value as an operator reads it: 5% for rates, 10m for ages. */
export function formatMetric(metric: ThresholdMetric, value: number): string {
  const unit = METRIC_UNIT[metric];
  if (unit === 'ratio') return `${Math.round(value * 10_000) / 100}%`;
  if (unit === 'seconds') return formatSeconds(value);
  return String(value);
}

export function describeBreach(b: Breach): string {
  return `${b.metric} ${formatMetric(b.metric, b.value)} >= ${formatMetric(b.metric, b.threshold)} (${b.level})`;
}

/** The first line of an error, at most 120 characters, with the Nagios separator `|` replaced. */
export function firstLine(error: string | null, max = 120): string {
  if (!error) return '-';
  const line = (error.split('\n')[0] ?? '').trim().replace(/\|/g, '/');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
