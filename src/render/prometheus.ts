import type { ReportMetrics, ReportResult } from '../core/report.js';
import { STATUS_EXIT } from '../core/thresholds.js';

/**
 * The report in the Prometheus text exposition format (0.0.4), for node_exporter's textfile
 * collector: every family has HELP and TYPE lines; all are gauges. Each family has one label set,
 * so `sum()` never counts twice: `taskrecon_report_<metric>{source,biz_type}` per biz type, and the
 * totals in their own `taskrecon_report_overall_<metric>{source}`. `taskrecon_up` is 1 and
 * `taskrecon_last_success_timestamp_seconds` the run's time (a run that could not reach the
 * database writes `renderPrometheusDown` instead). A metric the profile cannot compute is left
 * out (absent means unknown in Prometheus), never written as 0. The one exception to one label set:
 * `taskrecon_queue_reserved` of a laravel-jobs source ({source,queue}) shares its family
 * with a broker's gauges ({broker,queue}) when both are written (`renderFamilies`).
 */
export interface Family {
  name: string;
  help: string;
  samples: Array<{ labels: Record<string, string>; value: number }>;
}

const METRIC_FAMILIES: Array<[keyof ReportMetrics, string, string]> = [
  ['created', 'taskrecon_report_created', 'Tasks created in the window.'],
  ['succeeded', 'taskrecon_report_succeeded', 'Tasks created in the window that reached success.'],
  [
    'failed',
    'taskrecon_report_failed',
    'Tasks created in the window that are failed (failed-jobs tables: jobs that failed in the window).',
  ],
  ['failureRate', 'taskrecon_report_failure_ratio', 'Failed over created, for tasks created in the window.'],
  [
    'latencyAvgSeconds',
    'taskrecon_report_latency_avg_seconds',
    'Mean of updated_at - created_at of the window tasks that reached success.',
  ],
  [
    'latencyP95Seconds',
    'taskrecon_report_latency_p95_seconds',
    'p95 (nearest rank) of updated_at - created_at of the window tasks that reached success.',
  ],
  ['due', 'taskrecon_report_due', 'Pending tasks whose next retry time has passed, now.'],
  ['stuck', 'taskrecon_report_stuck', 'Processing tasks whose lease expired, now.'],
  ['failedOpen', 'taskrecon_report_failed_open', 'Failed tasks awaiting manual action, now.'],
  [
    'oldestDueSeconds',
    'taskrecon_report_oldest_due_seconds',
    'How long the oldest due task has been waiting, now.',
  ],
];

/** Label values escaped as the format requires: backslash, double quote and newline. */
export function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

export function renderFamily(family: Family): string {
  if (family.samples.length === 0) return '';
  const lines = [
    `# HELP ${family.name} ${family.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`,
    `# TYPE ${family.name} gauge`,
  ];
  for (const sample of family.samples) {
    const labels = Object.entries(sample.labels)
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
      .join(',');
    lines.push(`${family.name}{${labels}} ${formatValue(sample.value)}`);
  }
  return `${lines.join('\n')}\n`;
}

export function renderPrometheus(report: Omit<ReportResult, 'notifications'>): string {
  return renderFamilies(prometheusFamilies(report));
}

/**
 * Families rendered as one file, those sharing a name merged into one block (the first HELP kept):
 * the text format allows one HELP and TYPE per name, and node_exporter's textfile collector drops a
 * whole file that repeats one (a laravel-jobs source's `taskrecon_queue_reserved{source,queue}`
 * beside a broker's `taskrecon_queue_reserved{broker,queue}`).
 */
export function renderFamilies(families: readonly Family[]): string {
  const merged = new Map<string, Family>();
  for (const family of families) {
    const seen = merged.get(family.name);
    if (seen) seen.samples = [...seen.samples, ...family.samples];
    else merged.set(family.name, { ...family, samples: [...family.samples] });
  }
  return [...merged.values()].map(renderFamily).join('');
}

/** The report's families: up and last success, status, window, the figures, breaches, thresholds, per-queue figures. */
export function prometheusFamilies(report: Omit<ReportResult, 'notifications'> & ShardsPart): Family[] {
  const base = { source: report.source.name };
  const nowEpoch = Math.round(Date.parse(report.now) / 1000);
  const families: Family[] = [
    ...(report.shards
      ? shardFamilies(report.source.name, report.shards, nowEpoch)
      : upFamilies(report.source.name, 1, nowEpoch)),
    {
      name: 'taskrecon_report_status',
      help: 'Report status: 0 OK, 1 WARNING, 2 CRITICAL.',
      samples: [{ labels: base, value: STATUS_EXIT[report.status] }],
    },
    {
      name: 'taskrecon_report_window_seconds',
      help: 'Length of the report window.',
      samples: [{ labels: base, value: report.window.seconds }],
    },
    {
      name: 'taskrecon_report_timestamp_seconds',
      help: 'The database clock when the report ran, as a unix time.',
      samples: [{ labels: base, value: nowEpoch }],
    },
  ];
  for (const [field, name, help] of METRIC_FAMILIES) {
    const total = report.metrics[field];
    families.push({
      name: name.replace(/^taskrecon_report_/, 'taskrecon_report_overall_'),
      help: `${help} All biz types together.`,
      samples: total === null ? [] : [{ labels: base, value: total }],
    });
    const samples: Family['samples'] = [];
    for (const biz of report.byBizType) {
      const value = biz[field];
      if (value !== null) samples.push({ labels: { ...base, biz_type: biz.bizType ?? '' }, value });
    }
    families.push({ name, help, samples });
  }
  families.push({
    name: 'taskrecon_report_breach',
    help: 'A metric at or above its threshold: 1 per breached metric, labelled with the level.',
    samples: report.breaches.map((b) => ({
      labels: { ...base, metric: b.metric, level: b.level },
      value: 1,
    })),
  });
  families.push({
    name: 'taskrecon_report_threshold',
    help: 'The thresholds in force (rates as fractions, ages in seconds).',
    samples: Object.entries(report.thresholds).flatMap(([metric, limits]) =>
      Object.entries(limits).map(([level, value]) => ({
        labels: { ...base, metric, level },
        value: value as number,
      })),
    ),
  });
  if (report.byQueue) {
    const queue = (
      name: string,
      help: string,
      pick: (q: NonNullable<typeof report.byQueue>[number]) => number | null,
    ): Family => ({
      name,
      help,
      samples: (report.byQueue ?? []).flatMap((q) => {
        const value = pick(q);
        return value === null ? [] : [{ labels: { ...base, queue: q.queue }, value }];
      }),
    });
    families.push(
      queue('taskrecon_queue_backlog', 'Jobs waiting in the queue (not reserved).', (q) => q.backlog),
      queue('taskrecon_queue_due', 'Waiting jobs whose available_at has passed.', (q) => q.due),
      queue('taskrecon_queue_reserved', 'Jobs reserved by a worker.', (q) => q.reserved),
      queue(
        'taskrecon_queue_stale_reservations',
        'Reservations older than retry_after.',
        (q) => q.staleReservations,
      ),
      queue(
        'taskrecon_queue_oldest_job_seconds',
        'Age of the oldest waiting job.',
        (q) => q.oldestJobSeconds,
      ),
    );
  }
  return families;
}

/** The shards of a sharded source's report, as the report's JSON lists them. */
interface ShardsPart {
  shards?: {
    name: string;
    ok: boolean;
    due?: number | null;
    stuck?: number | null;
    failedOpen?: number | null;
  }[];
}

/**
 * A sharded source: `taskrecon_up{source,shard}` per shard (0 for one that could not be reached,
 * whose figures are then absent) and each shard's own due, stuck and failed-open counts.
 */
function shardFamilies(
  source: string,
  shards: NonNullable<ShardsPart['shards']>,
  nowEpoch: number,
): Family[] {
  const labels = (shard: string) => ({ source, shard });
  const figure = (
    name: string,
    help: string,
    pick: (s: (typeof shards)[number]) => number | null | undefined,
  ): Family => ({
    name,
    help,
    samples: shards.flatMap((s) => {
      const value = pick(s);
      return value === null || value === undefined ? [] : [{ labels: labels(s.name), value }];
    }),
  });
  return [
    {
      name: 'taskrecon_up',
      help: 'Whether the last report run reached the database and computed its figures (1) or not (0); per shard for a sharded source.',
      samples: shards.map((s) => ({ labels: labels(s.name), value: s.ok ? 1 : 0 })),
    },
    {
      name: 'taskrecon_last_success_timestamp_seconds',
      help: 'The database clock of the last report run that computed its figures, as a unix time.',
      samples: [{ labels: { source }, value: nowEpoch }],
    },
    figure(
      'taskrecon_shard_due',
      'Pending tasks whose next retry time has passed, now, on one shard.',
      (s) => s.due,
    ),
    figure(
      'taskrecon_shard_stuck',
      'Processing tasks whose lease expired, now, on one shard.',
      (s) => s.stuck,
    ),
    figure(
      'taskrecon_shard_failed_open',
      'Failed tasks awaiting manual action, now, on one shard.',
      (s) => s.failedOpen,
    ),
  ];
}

/** `taskrecon_up` and the time of the last run that reached the database (omitted when never). */
export function upFamilies(source: string, up: 0 | 1, lastSuccessEpoch: number | null): Family[] {
  return [
    {
      name: 'taskrecon_up',
      help: 'Whether the last report run reached the database and computed its figures (1) or not (0).',
      samples: [{ labels: { source }, value: up }],
    },
    {
      name: 'taskrecon_last_success_timestamp_seconds',
      help: 'The database clock of the last report run that computed its figures, as a unix time.',
      samples: lastSuccessEpoch === null ? [] : [{ labels: { source }, value: lastSuccessEpoch }],
    },
  ];
}

/**
 * The file of a run that could not reach the database: `taskrecon_up 0` and the last success time
 * read from the previous file, and no figures (stale ones would look current).
 */
export function renderPrometheusDown(source: string, lastSuccessEpoch: number | null): string {
  return upFamilies(source, 0, lastSuccessEpoch).map(renderFamily).join('');
}
