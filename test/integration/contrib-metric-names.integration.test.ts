import type { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { plantTaskTable } from '../support/planted-report.js';
import {
  dashboardQueries,
  metricNames,
  readDashboard,
  readRules,
  unknownNames,
} from '../support/promql-names.js';
import { api, scratchVhost, until, type ScratchVhost } from '../support/rabbitmq.js';
import { dropPrefix, laravelBrokerYaml, openTestRedis } from '../support/redis.js';

// The shipped Prometheus rules and Grafana dashboard read only metrics taskrecon writes: the names
// come from a real `report --format prometheus --output` run on a task table with every figure
// present (successes, failures, due, stuck, a breach) and two brokers (a Laravel Redis queue with
// overdue delayed jobs and an expired reservation, a RabbitMQ queue with messages and no consumer).

const DB = 13;
const prefix = `tr_contrib_${randomBytes(3).toString('hex')}_`;
let redis: Redis;
let rabbit: ScratchVhost;
let written: Set<string>;
let fileText: string;

beforeAll(async () => {
  redis = await openTestRedis(DB);
  rabbit = await scratchVhost('contrib');
  const ch = await rabbit.channel();
  await ch.assertQueue('business_queue', { durable: true });
  for (let i = 0; i < 3; i++) ch.sendToQueue('business_queue', Buffer.from(`{"n":${i}}`));
  await ch.close();
  // The management API's queue figures (unacked) are sampled: wait until it has them.
  await until(
    async () => {
      const queue = await api('GET', `/queues/${encodeURIComponent(rabbit.vhost)}/business_queue`);
      return (
        typeof (queue.json as { messages_unacknowledged?: unknown }).messages_unacknowledged === 'number'
      );
    },
    30_000,
    'the management API to report business_queue',
  );
  const now = Math.floor(Date.now() / 1000);
  const q = (suffix = '') => `${prefix}queues:default${suffix}`;
  await redis.rpush(q(), '{"uuid":"r1"}');
  await redis.zadd(q(':delayed'), now - 600, '{"uuid":"d1"}', now + 600, '{"uuid":"d2"}');
  await redis.zadd(q(':reserved'), now - 300, '{"uuid":"x1","attempts":1}');

  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-contrib-names-'));
  const config = await plantTaskTable(dir, 'shop', { created: 40, failures: 4, due: true, stuck: true }, [
    'brokers:',
    ...laravelBrokerYaml('redis-main', `redis://127.0.0.1:6379/${DB}`, prefix, ['default']),
    '  rabbit:',
    '    kind: rabbitmq',
    `    url: ${rabbit.amqpUrl}`,
    `    api: ${rabbit.apiUrl}`,
    '    queues: [business_queue]',
  ]);
  const output = join(dir, 'taskrecon.prom');
  const run = await runCli(
    ['report', '--config', config, '--format', 'prometheus', '--output', output, '--exit-status'],
    { cwd: dir },
  );
  // CRITICAL (10% failed) is exit 2 with --exit-status; anything else means the run did not write its figures.
  expect(run.code, run.stderr).toBe(2);
  fileText = readFileSync(output, 'utf8');
  written = new Set(parsePrometheusTextFormat(fileText).map((family) => family.name));
}, 120_000);

afterAll(async () => {
  if (redis) await dropPrefix(redis, prefix);
  redis?.disconnect();
  await rabbit?.drop();
});

describe('the metrics a real report writes', () => {
  it('include the report, per biz type, breach and both brokers’ queue families', () => {
    for (const name of [
      'taskrecon_up',
      'taskrecon_last_success_timestamp_seconds',
      'taskrecon_report_failure_ratio',
      'taskrecon_report_overall_latency_p95_seconds',
      'taskrecon_report_stuck',
      'taskrecon_report_breach',
      'taskrecon_queue_delayed_overdue',
      'taskrecon_queue_reserved_expired',
      'taskrecon_queue_consumers',
    ])
      expect(written, `${name} in:\n${fileText}`).toContain(name);
  });
});

describe('contrib/prometheus/taskrecon.rules.yml', () => {
  const rules = readRules();
  const all = rules.groups.flatMap((g) => g.rules);
  const recorded = new Set(all.flatMap((r) => (r.record ? [r.record] : [])));

  it('reads only metrics taskrecon writes (or that its own recording rules record)', () => {
    const known = new Set([...written, ...recorded]);
    expect(
      unknownNames(
        all.map((r) => r.expr),
        known,
      ),
    ).toEqual([]);
    // The recording rules themselves read taskrecon's metrics only.
    const recordingExprs = all.filter((r) => r.record).map((r) => r.expr);
    expect(unknownNames(recordingExprs, written)).toEqual([]);
  });

  it('covers the figures the alerts are for', () => {
    const used = new Set(all.flatMap((r) => metricNames(r.expr)));
    for (const name of [
      'taskrecon_up',
      'taskrecon_last_success_timestamp_seconds',
      'taskrecon_report_failure_ratio',
      'taskrecon_report_stuck',
      'taskrecon_report_oldest_due_seconds',
      'taskrecon_report_failed',
      'taskrecon_queue_delayed_overdue',
      'taskrecon_queue_consumers',
    ])
      expect(used).toContain(name);
    expect(all.filter((r) => r.alert).map((r) => r.alert)).toEqual([
      'TaskreconDown',
      'TaskreconShardDown',
      'TaskreconLastSuccessTooOld',
      'TaskreconFailureRateHigh',
      'TaskreconTasksStuck',
      'TaskreconOldestDueTooOld',
      'TaskreconTasksFailed',
      'TaskreconQueueDelayedOverdue',
      'TaskreconQueueNoConsumers',
    ]);
  });

  it('names recording rules level:metric:operations and gives every alert a severity and a runbook command', () => {
    for (const rule of all) {
      if (rule.record) expect(rule.record).toMatch(/^[a-z_]+:taskrecon_[a-z_]+:[a-z_]+$/);
      else {
        const alert = rule as {
          alert: string;
          labels?: Record<string, string>;
          annotations?: Record<string, string>;
        };
        expect(alert.alert).toMatch(/^Taskrecon[A-Z][A-Za-z]+$/);
        expect(['warning', 'critical']).toContain(alert.labels?.severity);
        expect(alert.annotations?.summary).toBeTruthy();
        expect(alert.annotations?.runbook, alert.alert).toMatch(/`taskrecon [a-z]+/);
      }
    }
  });
});

describe('contrib/grafana/taskrecon.json', () => {
  const dashboard = readDashboard();
  const queries = dashboardQueries(dashboard);

  it('queries only metrics taskrecon writes', () => {
    expect(queries.length).toBeGreaterThan(20);
    expect(unknownNames(queries, written)).toEqual([]);
  });

  it('has variables for the data source, the source and the broker, and the three sections', () => {
    const d = dashboard as {
      templating: { list: Array<{ name: string }> };
      panels: Array<{ type: string; title: string }>;
    };
    expect(d.templating.list.map((v) => v.name)).toEqual(
      expect.arrayContaining(['datasource', 'source', 'broker']),
    );
    expect(d.panels.filter((p) => p.type === 'row').map((p) => p.title)).toEqual([
      'Overview',
      'Per biz type',
      'Queues',
    ]);
    // Every queue gauge taskrecon writes has a panel.
    const used = new Set(queries.flatMap(metricNames));
    for (const name of written) if (name.startsWith('taskrecon_queue_')) expect(used).toContain(name);
  });
});

describe('the check can fail', () => {
  it('names a metric taskrecon does not write, in a rule or a dashboard', () => {
    expect(unknownNames(['taskrecon_report_failure_rate >= 0.05'], written)).toEqual([
      { query: 'taskrecon_report_failure_rate >= 0.05', names: ['taskrecon_report_failure_rate'] },
    ]);
    const planted = JSON.parse(
      JSON.stringify(readDashboard()).replace(
        'taskrecon_queue_consumers{',
        'taskrecon_queue_consumer_count{',
      ),
    ) as unknown;
    expect(unknownNames(dashboardQueries(planted), written)).toEqual([
      {
        query: 'taskrecon_queue_consumer_count{broker=~"$broker"}',
        names: ['taskrecon_queue_consumer_count'],
      },
    ]);
    const variable = {
      templating: { list: [{ type: 'query', query: { query: 'label_values(taskrecon_upp, source)' } }] },
    };
    expect(unknownNames(dashboardQueries(variable), written)).toEqual([
      { query: 'label_values(taskrecon_upp, source)', names: ['taskrecon_upp'] },
    ]);
  });

  it('reads names, not functions, labels, keywords, numbers or variables', () => {
    expect(
      metricNames(
        'sum by (source, biz_type) (rate(a_total{x="y",z=~"$v"}[5m] offset 1h)) / on(source) group_left(q) b:c:d > 1e3 and time() - c_seconds unless label_replace(d, "l", "$1", "m", "(.*)")',
      ).sort(),
    ).toEqual(['a_total', 'b:c:d', 'c_seconds', 'd']);
    expect(metricNames('label_values(taskrecon_report_created{source=~"$source"}, biz_type)')).toEqual([
      'taskrecon_report_created',
    ]);
  });
});
