import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import type { ReportResult } from '../../src/core/report.js';
import { DEFAULT_THRESHOLDS } from '../../src/core/thresholds.js';
import { renderPrometheus, renderPrometheusDown } from '../../src/render/prometheus.js';
import { lastSuccessFromFile, writeDownFile } from '../../src/verbs/report/prometheus-state.js';

const metrics = {
  created: 7,
  succeeded: 5,
  failed: 2,
  failureRate: 2 / 7,
  latencyAvgSeconds: 1,
  latencyP95Seconds: 2,
  due: 3,
  stuck: 1,
  failedOpen: 2,
  oldestDueSeconds: 60,
};
const report: Omit<ReportResult, 'notifications'> = {
  status: 'WARNING',
  source: { name: 'tasks', profile: 'async-task', table: 'async_task', db: 'sqlite:x' },
  now: '2026-11-17T08:00:00Z',
  window: { seconds: 900, since: '2026-11-17T07:45:00Z', until: '2026-11-17T08:00:00Z' },
  metrics,
  breaches: [{ metric: 'stuck', level: 'warn', value: 1, threshold: 1 }],
  thresholds: DEFAULT_THRESHOLDS,
  byBizType: [
    { bizType: 'coupon', ...metrics, created: 4, sample: null },
    { bizType: 'points', ...metrics, created: 3, sample: null },
  ],
  byQueue: [{ queue: 'default', backlog: 3, due: 2, reserved: 1, staleReservations: 0, oldestJobSeconds: 9 }],
  notes: [],
};

/** For every family: the set of label names of each of its series, which must be one set. */
function labelSets(text: string): Map<string, Set<string>> {
  const sets = new Map<string, Set<string>>();
  for (const family of parsePrometheusTextFormat(text)) {
    sets.set(
      family.name,
      new Set(
        family.metrics.map((m) =>
          Object.keys(m.labels ?? {})
            .sort()
            .join(','),
        ),
      ),
    );
  }
  return sets;
}

describe('prometheus families have one label set each', () => {
  const text = renderPrometheus(report);

  it('never mixes an unlabeled total with per-biz-type series, so sum() counts once', () => {
    const sets = labelSets(text);
    expect(sets.size).toBeGreaterThan(20);
    for (const [name, set] of sets) expect([...set], name).toHaveLength(1);
    const families = parsePrometheusTextFormat(text);
    const created = families.find((f) => f.name === 'taskrecon_report_created')?.metrics ?? [];
    expect(created.reduce((sum, m) => sum + Number(m.value), 0)).toBe(7); // the biz types, once
    expect(families.find((f) => f.name === 'taskrecon_report_overall_created')?.metrics).toEqual([
      { labels: { source: 'tasks' }, value: '7' },
    ]);
  });

  it('says the run was up, and when it last succeeded', () => {
    const families = parsePrometheusTextFormat(text);
    expect(families.find((f) => f.name === 'taskrecon_up')?.metrics).toEqual([
      { labels: { source: 'tasks' }, value: '1' },
    ]);
    expect(
      families.find((f) => f.name === 'taskrecon_last_success_timestamp_seconds')?.metrics[0]?.value,
    ).toBe(String(Date.parse('2026-11-17T08:00:00Z') / 1000));
  });
});

describe('a run that cannot reach the database', () => {
  it('rewrites the file with taskrecon_up 0, the last success time kept and no stale figures', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'taskrecon-prom-down-')), 'taskrecon.prom');
    writeFileSync(file, renderPrometheus(report));
    expect(lastSuccessFromFile(file)).toBe(Date.parse('2026-11-17T08:00:00Z') / 1000);
    expect(writeDownFile(file, () => 'tasks')).toBe(true);
    const text = readFileSync(file, 'utf8');
    const families = parsePrometheusTextFormat(text);
    expect(families.map((f) => f.name)).toEqual(['taskrecon_up', 'taskrecon_last_success_timestamp_seconds']);
    expect(families[0]?.metrics).toEqual([{ labels: { source: 'tasks' }, value: '0' }]);
    expect(families[1]?.metrics[0]?.value).toBe(String(Date.parse('2026-11-17T08:00:00Z') / 1000));
    // A second failure in a row still keeps it.
    writeDownFile(file, () => 'tasks');
    expect(lastSuccessFromFile(file)).toBe(Date.parse('2026-11-17T08:00:00Z') / 1000);
  });

  it('omits the last success time when no run ever succeeded', () => {
    const text = renderPrometheusDown('tasks', null);
    expect(parsePrometheusTextFormat(text).map((f) => f.name)).toEqual(['taskrecon_up']);
  });
});
