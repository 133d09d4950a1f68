import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { plantTaskTable } from '../support/planted-report.js';
import { RULES_FILE } from '../support/promql-names.js';
import {
  ensurePrometheusPackages,
  prometheusApi,
  startPrometheusStack,
  type PrometheusStack,
} from '../support/prometheus-stack.js';

// End to end: `taskrecon report --format prometheus --output` writes its textfile for two sources,
// one with a planted failure spike (10 of 40 tasks failed) and one healthy; Debian's node_exporter
// serves both through its textfile collector; a real Prometheus scrapes it with the shipped rules,
// and its API shows TaskreconFailureRateHigh firing for the spike and not for the healthy table.

interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: string;
  value: string;
}

let dir: string;
let stack: PrometheusStack | undefined;

beforeAll(async () => {
  ensurePrometheusPackages(['prometheus', 'prometheus-node-exporter']);
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-contrib-e2e-'));
  const textfiles = join(dir, 'textfile');
  mkdirSync(textfiles);
  const spiky = await plantTaskTable(dir, 'spiky', { created: 40, failures: 10 });
  const healthy = await plantTaskTable(dir, 'healthy', { created: 40, failures: 0 });
  const spikyRun = await runCli(
    [
      'report',
      '--config',
      spiky,
      '--format',
      'prometheus',
      '--output',
      join(textfiles, 'spiky.prom'),
      '--exit-status',
    ],
    { cwd: dir },
  );
  expect(spikyRun.code, spikyRun.stderr).toBe(2);
  const healthyRun = await runCli(
    ['report', '--config', healthy, '--format', 'prometheus', '--output', join(textfiles, 'healthy.prom')],
    { cwd: dir },
  );
  expect(healthyRun.code, healthyRun.stderr).toBe(0);
  stack = await startPrometheusStack(dir, textfiles, [RULES_FILE]);
}, 1_800_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Polls the alerts API until `done` holds for them (bounded), and returns them. */
async function alertsUntil(done: (alerts: Alert[]) => boolean, ms = 60_000): Promise<Alert[]> {
  const end = Date.now() + ms;
  let alerts: Alert[] = [];
  while (Date.now() < end) {
    alerts = (await prometheusApi<{ alerts: Alert[] }>(stack!.prometheusUrl, '/api/v1/alerts')).alerts;
    if (done(alerts)) return alerts;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`timed out; alerts: ${JSON.stringify(alerts)}\n${stack!.logs()}`);
}

describe('report → node_exporter textfile collector → Prometheus with the shipped rules', () => {
  it('node_exporter serves the textfile taskrecon wrote', async () => {
    const response = await request(`${stack!.exporterUrl}/metrics`);
    const body = await response.body.text();
    expect(body).toContain('taskrecon_report_failure_ratio{biz_type="coupon",source="spiky"} 0.25');
    expect(body).toContain('taskrecon_report_failure_ratio{biz_type="coupon",source="healthy"} 0');
    // The collector read the files without an error.
    expect(body).toMatch(/node_textfile_scrape_error 0/);
  });

  it('fires TaskreconFailureRateHigh for the failure spike, with its runbook', async () => {
    const isSpike = (a: Alert) =>
      a.labels.alertname === 'TaskreconFailureRateHigh' &&
      a.labels.source === 'spiky' &&
      a.state === 'firing';
    const alerts = await alertsUntil((list) => list.some(isSpike));
    const alert = alerts.find(isSpike)!;
    expect(alert.labels).toMatchObject({ biz_type: 'coupon', severity: 'critical', job: 'node' });
    expect(Number(alert.value)).toBe(0.25);
    expect(alert.annotations.summary).toBe('coupon tasks of spiky fail at 25%');
    expect(alert.annotations.runbook).toContain('taskrecon report --source spiky --biz-type coupon');
  });

  it('does not fire for the healthy table, whose figures Prometheus has evaluated', async () => {
    // The healthy series are scraped and the rule group has run on them...
    const query = await prometheusApi<{ result: Array<{ value: [number, string] }> }>(
      stack!.prometheusUrl,
      `/api/v1/query?query=${encodeURIComponent('taskrecon_report_failure_ratio{source="healthy"}')}`,
    );
    expect(query.result.map((r) => r.value[1])).toEqual(['0']);
    const groups = await prometheusApi<{
      groups: Array<{ name: string; lastEvaluation: string; rules: Array<{ name: string; health: string }> }>;
    }>(stack!.prometheusUrl, '/api/v1/rules');
    const alertsGroup = groups.groups.find((g) => g.name === 'taskrecon.alerts')!;
    expect(Date.parse(alertsGroup.lastEvaluation)).toBeGreaterThan(Date.now() - 60_000);
    for (const rule of alertsGroup.rules) expect(rule.health, rule.name).toBe('ok');
    // ...and no alert of any kind names the healthy source.
    const alerts = (await prometheusApi<{ alerts: Alert[] }>(stack!.prometheusUrl, '/api/v1/alerts')).alerts;
    expect(alerts.filter((a) => a.labels.source === 'healthy')).toEqual([]);
    expect(
      alerts.filter((a) => a.labels.alertname === 'TaskreconFailureRateHigh').map((a) => a.labels.source),
    ).toEqual(['spiky']);
  });
});
