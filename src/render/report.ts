import { formatSeconds } from '../core/duration.js';
import type { ReportResult } from '../core/report.js';
import { describeBreach, firstLine, formatMetric } from './nagios.js';
import { heading, renderFields, renderTable } from './table.js';
import { chalk } from './terminal.js';
import { grouped } from '../core/grouped.js';

const STATUS_COLOR = { OK: chalk.green, WARNING: chalk.yellow, CRITICAL: chalk.red } as const;
const n = (v: number | null): string => (v === null ? 'n/a' : grouped(v));
const rate = (v: number | null): string => (v === null ? 'n/a' : formatMetric('failureRate', v));
const secs = (v: number | null): string => (v === null ? 'n/a' : formatSeconds(v));

/** The human view of a report: status, metrics, per biz type, breaches, samples, notes, notifications. */
export function renderReport(report: ReportResult): string {
  const m = report.metrics;
  const out: string[] = [];
  out.push(
    `${STATUS_COLOR[report.status].bold(report.status)}  ${report.source.name} (${report.source.profile}, table ${report.source.table}) on ${report.source.db}`,
  );
  out.push(
    chalk.dim(
      `window ${formatSeconds(report.window.seconds)}: created ${report.window.since} … ${report.window.until} (database clock)`,
    ),
  );
  out.push('');
  const row = (b: typeof m) => [
    n(b.created),
    n(b.succeeded),
    n(b.failed),
    rate(b.failureRate),
    secs(b.latencyAvgSeconds),
    secs(b.latencyP95Seconds),
    n(b.due),
    secs(b.oldestDueSeconds),
    n(b.stuck),
    n(b.failedOpen),
  ];
  out.push(
    renderTable(
      [
        { title: 'biz type', fit: 'tail' },
        'created',
        // Left out first on a narrow terminal: created and failed say the most about it.
        { title: 'succeeded', drop: 1 },
        'failed',
        'failure rate',
        'latency avg',
        'latency p95',
        'due',
        'oldest due',
        'stuck',
        'failed open',
      ],
      [...report.byBizType.map((b) => [b.bizType ?? '(none)', ...row(b)]), [chalk.bold('all'), ...row(m)]],
    ),
  );
  if (report.byQueue?.length) {
    out.push('', heading('Queues'));
    out.push(
      renderTable(
        [{ title: 'queue', fit: 'whole' }, 'backlog', 'due', 'reserved', 'stale reservations', 'oldest job'],
        report.byQueue.map((q) => [
          q.queue,
          n(q.backlog),
          n(q.due),
          n(q.reserved),
          n(q.staleReservations),
          secs(q.oldestJobSeconds),
        ]),
      ),
    );
  }
  out.push('', heading('Breaches'));
  out.push(
    report.breaches.length
      ? report.breaches
          .map(
            (b) => `  ${b.level === 'crit' ? chalk.red('crit') : chalk.yellow('warn')} ${describeBreach(b)}`,
          )
          .join('\n')
      : '  none',
  );
  const sampled = report.byBizType.filter((b) => b.sample);
  if (sampled.length) {
    out.push('', heading('Latest failure per failing biz type'));
    out.push(
      renderFields(
        sampled.map((b) => [
          b.bizType ?? '(none)',
          `biz_id=${b.sample?.bizId ?? '-'} event_id=${b.sample?.eventId ?? '-'} id=${b.sample?.id} ${firstLine(b.sample?.error ?? null, 100)}`,
        ]),
      ),
    );
  }
  if (report.sweep)
    out.push(`sweep: ${report.sweep.secondFailures} second failure(s), ${report.sweep.deferred} deferred`);
  for (const note of report.notes) out.push(chalk.dim(`note: ${note}`));
  for (const sent of report.notifications) {
    const what =
      sent.outcome === 'failed' ? chalk.red(`failed: ${sent.error}`) : `${sent.outcome} (${sent.reason})`;
    out.push(`notify ${sent.kind} ${sent.target}: ${what}`);
  }
  return out.join('\n');
}
