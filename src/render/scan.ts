import { formatSeconds } from '../core/duration.js';
import type { Task } from '../core/task.js';
import type { ScanResult } from '../verbs/scan/index.js';
import { heading, renderTable, type Head } from './table.js';

/** Which list a task list is: it decides which of its times a narrow terminal keeps. */
export type TaskList = 'stuck' | 'due' | 'failed';
import { chalk, oneLine } from './terminal.js';
import { grouped } from '../core/grouped.js';

const STATUS_COLOR: Record<string, (s: string) => string> = {
  pending: chalk.cyan,
  processing: chalk.blue,
  success: chalk.green,
  failed: chalk.red,
  compensated: chalk.magenta,
  unknown: chalk.yellow,
};

export function colorStatus(status: string): string {
  return (STATUS_COLOR[status] ?? ((s: string) => s))(status);
}

const n = (value: number | null): string => (value === null ? 'n/a' : grouped(value));

/**
 * A list of tasks. Jobs of a queue framework (a failed-jobs table: any task with a queue or a
 * connection) get a queue and a connection column; the table fits the terminal like every other.
 */
export function renderTaskList(title: string, tasks: Task[], list: TaskList = 'due'): string {
  if (tasks.length === 0) return `${heading(title)}\n  none`;
  const jobs = tasks.some((t) => (t.queue ?? null) !== null || (t.connection ?? null) !== null);
  // Failed jobs are never retried on a schedule: their empty next-retry column makes room for the queue.
  const nextRetry = !jobs || tasks.some((t) => t.nextRetryAt !== null);
  // A task of a sharded source is addressed as SHARD:ID (show takes it so).
  const idOf = (t: Task & { shard?: string }) =>
    t.shard === undefined ? String(t.id) : `${t.shard}:${t.id}`;
  const rows = tasks.map((t) => [
    idOf(t),
    t.bizType ?? '',
    t.bizId ?? t.eventId ?? '',
    colorStatus(t.status),
    t.attempts,
    ...(jobs ? [t.queue ?? '', t.connection ?? ''] : []),
    ...(nextRetry ? [t.nextRetryAt ?? ''] : []),
    t.updatedAt ?? '',
    oneLine(t.lastError, 60),
  ]);
  // On a narrow terminal the status (the list's title says it) goes first, then the time that
  // matters less for the list (a stuck row is judged by its update, a due one by its next retry).
  const head: Head[] = [
    { title: 'id', fit: 'whole' },
    { title: 'biz type', fit: 'tail' },
    { title: 'biz id', fit: 'whole' },
    { title: 'status', drop: 1 },
    { title: 'attempts', drop: 3 },
    ...(jobs
      ? [
          { title: 'queue', fit: 'whole' as const },
          { title: 'connection', drop: 4 },
        ]
      : []),
    ...(nextRetry ? [{ title: 'next retry', drop: list === 'due' ? 5 : 2 }] : []),
    { title: jobs && !nextRetry ? 'failed' : 'updated', drop: list === 'due' ? 2 : 5 },
    'last error',
  ];
  return `${heading(title)}\n${renderTable(head, rows)}`;
}

/** The human view of a scan: summary, per biz type, then the three lists. */
export function renderScan(result: ScanResult): string {
  const { summary } = result;
  const out: string[] = [];
  out.push(
    `${chalk.bold('source')} ${result.source.name} (${result.source.profile}, table ${result.source.table}) on ${result.source.db}`,
  );
  out.push(
    `${chalk.bold('now')}    ${result.now} (database clock); stuck after ${formatSeconds(result.stuckAfterSeconds)}`,
  );
  out.push('');
  const statusCells = (s: ScanResult['summary']['byStatus']) => [
    n(s.pending),
    n(s.processing),
    n(s.success),
    n(s.failed),
    n(s.compensated),
  ];
  out.push(
    renderTable(
      [
        { title: 'biz type', fit: 'tail' },
        'total',
        'pending',
        'processing',
        // What went well matters least to the person reading this on a narrow terminal.
        { title: 'success', drop: 1 },
        'failed',
        'compensated',
        'stuck',
        'due',
        'oldest due',
      ],
      [
        ...result.byBizType.map((b) => [
          b.bizType ?? '(none)',
          n(b.total),
          ...statusCells(b.byStatus),
          n(b.stuck),
          n(b.due),
          formatSeconds(b.oldestDueSeconds),
        ]),
        [
          chalk.bold('all'),
          n(summary.total),
          ...statusCells(summary.byStatus),
          n(summary.stuck),
          n(summary.due),
          formatSeconds(summary.oldestDueSeconds),
        ],
      ],
    ),
  );
  for (const note of result.notes) out.push(chalk.dim(`note: ${note}`));
  for (const [title, tasks, total, list] of [
    ['Stuck (processing, lease expired)', result.stuck, summary.stuck, 'stuck'],
    ['Due or overdue (pending)', result.due, summary.due, 'due'],
    ['Failed (awaiting manual action)', result.failed, summary.byStatus.failed, 'failed'],
  ] as const) {
    out.push('');
    const shown =
      total !== null && tasks.length < total ? ` — ${tasks.length} of ${grouped(total)} shown` : '';
    out.push(renderTaskList(`${title}${shown}`, tasks, list));
  }
  if (result.orphans) {
    const total = summary.orphans ?? result.orphans.length;
    const shown = result.orphans.length < total ? ` — ${result.orphans.length} of ${total} shown` : '';
    out.push(
      '',
      renderTaskList(`Orphans (held by no execution, not finished)${shown}`, result.orphans, 'failed'),
    );
  }
  return out.join('\n');
}
