import { formatSeconds } from '../core/duration.js';
import type { Trend, TrendPoint } from '../core/trend.js';

/** Eight levels of a sparkline; a bucket with nothing to measure is a space. */
const BARS = '▁▂▃▄▅▆▇█';

/** One series as a sparkline: each value scaled to the series' own maximum. */
export function sparkline(values: readonly (number | null)[]): string {
  const max = Math.max(0, ...values.map((v) => v ?? 0));
  return values
    .map((v) => {
      if (v === null) return ' ';
      if (max === 0) return BARS[0];
      return BARS[Math.min(BARS.length - 1, Math.round((v / max) * (BARS.length - 1)))];
    })
    .join('');
}

function fmt(series: keyof TrendPoint, n: number | null): string {
  if (n === null) return 'n/a';
  if (series === 'failureRate') return `${(n * 100).toFixed(1)}%`;
  if (series === 'latencyAvgSeconds') return formatSeconds(n);
  return String(n);
}

const SERIES: Array<[keyof TrendPoint, string]> = [
  ['created', 'created'],
  ['failed', 'failed'],
  ['failureRate', 'failure rate'],
  ['latencyAvgSeconds', 'latency avg'],
];

/** `report --trend`: the console's trend series as terminal sparklines, oldest bucket on the left. */
export function renderTrend(trend: Trend): string {
  const bucket = formatSeconds(trend.bucketSeconds);
  const lines = [`Trend over ${trend.span} (${trend.points.length} buckets of ${bucket}, oldest first)`];
  for (const [key, label] of SERIES) {
    const values = trend.points.map((p) => p[key] as number | null);
    const max = Math.max(...values.map((v) => v ?? -Infinity));
    const last = values[values.length - 1] ?? null;
    lines.push(
      `  ${label.padEnd(13)} ${sparkline(values)}  now ${fmt(key, last)}, max ${fmt(key, Number.isFinite(max) ? max : null)}`,
    );
  }
  return lines.join('\n');
}
