import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import type { ReportResult } from '../../src/core/report.js';
import { DEFAULT_THRESHOLDS } from '../../src/core/thresholds.js';
import { escapeLabel, renderPrometheus } from '../../src/render/prometheus.js';

const metrics = {
  created: 5,
  succeeded: 4,
  failed: 1,
  failureRate: 0.2,
  latencyAvgSeconds: 1.5,
  latencyP95Seconds: 3,
  due: 0,
  stuck: 0,
  failedOpen: 1,
  oldestDueSeconds: null,
};
const report: Omit<ReportResult, 'notifications'> = {
  status: 'CRITICAL',
  source: { name: 'tasks', profile: 'async-task', table: 'async_task', db: 'sqlite:x' },
  now: '2026-11-17T08:00:00Z',
  window: { seconds: 900, since: '2026-11-17T07:45:00Z', until: '2026-11-17T08:00:00Z' },
  metrics,
  breaches: [{ metric: 'failureRate', level: 'crit', value: 0.2, threshold: 0.05 }],
  thresholds: DEFAULT_THRESHOLDS,
  byBizType: [{ bizType: 'weird "biz"\\type\nname', ...metrics, sample: null }],
  byQueue: [
    { queue: 'default', backlog: 3, due: 2, reserved: 1, staleReservations: 1, oldestJobSeconds: 120 },
  ],
  notes: [],
};

describe('prometheus output', () => {
  const text = renderPrometheus(report);
  const families = parsePrometheusTextFormat(text);
  const family = (name: string) => families.find((f) => f.name === name);

  it('is read back by a text-format parser, every family a gauge with HELP', () => {
    expect(families.length).toBeGreaterThan(10);
    for (const f of families) {
      expect(f.type, f.name).toBe('GAUGE');
      expect(f.help, f.name).not.toBe('');
    }
    expect(family('taskrecon_report_status')?.metrics).toEqual([{ labels: { source: 'tasks' }, value: '2' }]);
    expect(family('taskrecon_report_window_seconds')?.metrics[0]?.value).toBe('900');
    expect(family('taskrecon_report_timestamp_seconds')?.metrics[0]?.value).toBe(
      String(Date.parse('2026-11-17T08:00:00Z') / 1000),
    );
    expect(family('taskrecon_queue_stale_reservations')?.metrics).toEqual([
      { labels: { source: 'tasks', queue: 'default' }, value: '1' },
    ]);
    expect(family('taskrecon_report_threshold')?.metrics).toContainEqual({
      labels: { source: 'tasks', metric: 'oldestDue', level: 'warn' },
      value: '600',
    });
  });

  it('escapes label values so that any biz type name survives the round trip', () => {
    const created = family('taskrecon_report_created')?.metrics;
    expect(created).toContainEqual({
      labels: { source: 'tasks', biz_type: 'weird "biz"\\type\nname' },
      value: '5',
    });
    expect(escapeLabel('a"b\\c\nd')).toBe('a\\"b\\\\c\\nd');
  });

  it('leaves out what is unknown rather than writing 0', () => {
    expect(family('taskrecon_report_oldest_due_seconds')).toBeUndefined();
    expect(text).not.toContain('oldest_due_seconds');
  });
});
