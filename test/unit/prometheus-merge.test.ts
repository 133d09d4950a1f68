import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS } from '../../src/core/thresholds.js';
import { prometheusFamilies, renderFamily } from '../../src/render/prometheus.js';
import { queuePrometheusFamilies } from '../../src/render/queues.js';
import { renderReportAs, type FullReport } from '../../src/render/report-output.js';

// A laravel-jobs source writes per-queue figures (`taskrecon_queue_reserved{source,queue}`) and a
// configured broker writes its gauges (`taskrecon_queue_reserved{broker,queue}`): one file must name
// each family once, or node_exporter's textfile collector drops the whole file.

const metrics = {
  created: 5,
  succeeded: 5,
  failed: 0,
  failureRate: 0,
  latencyAvgSeconds: 1,
  latencyP95Seconds: 1,
  due: 0,
  stuck: 0,
  failedOpen: 0,
  oldestDueSeconds: null,
};
const report: FullReport = {
  status: 'OK',
  source: { name: 'jobs', profile: 'laravel-jobs', table: 'jobs', db: 'sqlite:x' },
  now: '2026-11-17T08:00:00Z',
  window: { seconds: 900, since: '2026-11-17T07:45:00Z', until: '2026-11-17T08:00:00Z' },
  metrics,
  breaches: [],
  thresholds: DEFAULT_THRESHOLDS,
  byBizType: [],
  byQueue: [
    { queue: 'default', backlog: 3, due: 2, reserved: 1, staleReservations: 0, oldestJobSeconds: 60 },
  ],
  notes: [],
  notifications: [],
  queues: {
    status: 'OK',
    thresholds: {},
    breaches: [],
    findings: [],
    unreachable: [],
    queues: [
      {
        broker: 'redis-main',
        queue: 'default',
        ready: 4,
        delayed: 0,
        delayedOverdue: 0,
        oldestOverdueSeconds: null,
        reserved: 2,
        reservedExpired: 0,
        unacked: null,
        consumers: null,
        failed: null,
        stalled: null,
        bullmq: null,
      },
    ],
  },
} as FullReport;

const helpLines = (text: string, name: string) =>
  text.split('\n').filter((line) => line.startsWith(`# HELP ${name} `)).length;

describe('report --format prometheus with per-queue figures and broker gauges', () => {
  it('the two sources of figures do share a family name (the case is real)', () => {
    const naive = [...prometheusFamilies(report), ...queuePrometheusFamilies(report.queues!)]
      .map(renderFamily)
      .join('');
    expect(helpLines(naive, 'taskrecon_queue_reserved')).toBe(2);
  });

  it('names every family once, with the samples of both', () => {
    const text = renderReportAs('prometheus', report);
    const names = text
      .split('\n')
      .filter((line) => line.startsWith('# HELP '))
      .map((line) => line.split(' ')[2]);
    expect(names.length).toBeGreaterThan(10);
    expect(new Set(names).size).toBe(names.length);
    const reserved = parsePrometheusTextFormat(text).find((f) => f.name === 'taskrecon_queue_reserved');
    expect(reserved?.metrics).toEqual([
      { labels: { source: 'jobs', queue: 'default' }, value: '1' },
      { labels: { broker: 'redis-main', queue: 'default' }, value: '2' },
    ]);
  });
});
