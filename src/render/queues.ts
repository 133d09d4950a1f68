import type {
  Acknowledgement,
  MoveResult,
  QueueFinding,
  QueuesResult,
  QueueStats,
} from '../brokers/types.js';
import type { QueueGauge, QueueReportSection, RecoverResult } from '../verbs/queues/index.js';
import { auditRunCommand, withPasteConnection } from './paste.js';
import type { Family } from './prometheus.js';
import { heading, renderTable } from './table.js';
import { hangingIndent } from './fit.js';
import { chalk, printable, tableWidth } from './terminal.js';

/**
 * `queues`, `queues move` and `queues recover` for humans: one row per queue with the columns that
 * apply to the brokers shown (Redis has no consumers, RabbitMQ no delayed set), narrowed to fit the
 * terminal, then the findings with their hints.
 */

type Column = { head: string; value: (q: QueueStats) => string | number | null; width: number };

function age(seconds: number | null): string | null {
  if (seconds === null) return null;
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86400)}d`;
}

const COLUMNS: Column[] = [
  { head: 'ready', value: (q) => q.ready, width: 9 },
  { head: 'delayed', value: (q) => q.delayed, width: 9 },
  { head: 'overdue', value: (q) => q.delayedOverdue, width: 9 },
  { head: 'oldest', value: (q) => age(q.oldestOverdueSeconds), width: 8 },
  { head: 'reserved', value: (q) => q.reserved, width: 10 },
  { head: 'expired', value: (q) => q.reservedExpired, width: 9 },
  // BullMQ: its failed and completed sets.
  { head: 'failed', value: (q) => q.bullmq?.failed ?? null, width: 8 },
  { head: 'completed', value: (q) => q.bullmq?.completed ?? null, width: 11 },
  { head: 'unacked', value: (q) => q.unacked, width: 9 },
  { head: 'consumers', value: (q) => q.consumers, width: 11 },
];

/** Columns some queue has a value for; the least needed dropped until the table fits `width`. */
function columnsFor(queues: QueueStats[], width: number, nameWidth: number): Column[] {
  const used = COLUMNS.filter((c) => queues.some((q) => c.value(q) !== null));
  const dropOrder = ['oldest', 'completed', 'consumers', 'unacked', 'expired', 'overdue'];
  const total = () => nameWidth + used.reduce((n, c) => n + c.width, 0);
  for (const head of dropOrder) {
    if (total() <= width) break;
    const at = used.findIndex((c) => c.head === head);
    if (at >= 0) used.splice(at, 1);
  }
  return used;
}

function levelText(f: { level: QueueFinding['level']; acknowledged?: Acknowledgement }): string {
  if (f.acknowledged) return chalk.dim('ACK');
  return f.level === 'crit' ? chalk.red('CRIT') : chalk.yellow('WARN');
}

/** The line under an acknowledged finding or breach: until when, by whom, why. */
function ackLine(ack: Acknowledgement): string {
  return chalk.dim(`     acknowledged #${ack.id} until ${ack.until} by ${ack.operator}: ${ack.reason}`);
}

/** The findings with every command of their hints completed with the connection and broker of this run. */
export function withPasteHints(result: QueuesResult): QueuesResult {
  return { ...result, findings: result.findings.map((f) => ({ ...f, hint: withPasteConnection(f.hint) })) };
}

export function renderQueues(result: QueuesResult, terminalColumns?: number): string {
  const width = terminalColumns && terminalColumns > 40 ? terminalColumns : 120;
  const out: string[] = [];
  const queues = result.brokers.flatMap((b) => b.queues);
  // A queue's name is what a move names: shown whole, however long.
  const nameWidth = Math.max(8, ...queues.map((q) => printable(q.name).length)) + 4;
  for (const broker of result.brokers) {
    out.push(
      heading(
        `${broker.name} (${broker.kind}${broker.framework ? `, ${broker.framework}` : ''}) ${broker.url}`,
      ),
    );
    if (broker.queues.length === 0) {
      out.push(chalk.dim('  no queues found'));
      continue;
    }
    const columns = columnsFor(broker.queues, width, nameWidth);
    out.push(
      renderTable(
        [{ title: 'queue', fit: 'whole' }, ...columns.map((c) => c.head)],
        broker.queues.map((q) => [printable(q.name), ...columns.map((c) => c.value(q))]),
      ),
    );
    for (const q of broker.queues) {
      for (const s of q.samples ?? [])
        out.push(
          chalk.dim(
            `  ${printable(q.name, 30)}: ${s.jobId || '?'} ${s.name ?? ''} attempts=${s.attempts ?? '?'} ${s.bytes}B`,
          ),
        );
      for (const j of q.failedJobs ?? [])
        out.push(
          chalk.dim(
            `  ${printable(q.name, 30)}: failed ${printable(j.jobId, 40)} ${printable(j.name, 40)} attempts=${j.attemptsMade}: ${printable(j.failedReason ?? '?', 200)}`,
          ),
        );
    }
  }
  if (result.findings.length === 0) out.push(chalk.green('No findings.'));
  for (const f of result.findings) {
    // On a terminal a long finding wraps under itself.
    out.push(
      hangingIndent(
        `${levelText(f)} ${f.code} ${f.broker}${f.queue ? `/${printable(f.queue)}` : ''}: `,
        f.message,
        tableWidth(),
        5,
      ),
    );
    // The hint stays one line: its command is pasted as a whole.
    out.push(f.acknowledged ? ackLine(f.acknowledged) : chalk.dim(`     ${f.hint}`));
  }
  return out.join('\n');
}

export function renderMove(result: MoveResult): string {
  const what = `${result.what} jobs of ${result.from} → ${result.to} on ${result.broker}`;
  if (result.dryRun)
    return [
      `dry run: ${result.matched} ${what} would move; nothing moved.`,
      ...possibleDuplicateLines(result),
    ].join('\n');
  const line = `moved ${result.moved} of ${result.matched} ${what}`;
  const audit = `audited as run ${result.runId}: ${auditRunCommand(result.runId)}`;
  const body = result.moved < result.matched ? `${line} (stopped early)\n${audit}` : `${line}\n${audit}`;
  return [body, ...possibleDuplicateLines(result)].join('\n');
}

/** Killed runs' batches this run settled: their messages may be at the target twice. */
function possibleDuplicateLines(result: MoveResult): string[] {
  return (result.possibleDuplicates ?? []).map(
    (d) =>
      `possible duplicates at ${d.to} from run ${d.runId}, killed before it settled (audited under that run): ` +
      `${d.messageIds.length} message(s): ${d.messageIds.slice(0, 20).join(', ')}${d.messageIds.length > 20 ? ', …' : ''}`,
  );
}

export function renderRecover(result: RecoverResult): string {
  const rows = result.results.map((r) => [r.from, r.what, r.matched, r.moved]);
  const head = result.dryRun ? 'dry run: nothing moved' : `moved ${result.moved} job(s) back to ready`;
  const audit =
    result.dryRun || result.moved === 0
      ? ''
      : `\naudited as run ${result.runId}: ${auditRunCommand(result.runId)}`;
  return `${renderTable(['queue', 'from', 'due', 'moved'], rows)}\n${head}${audit}`;
}

/** Asks on the terminal; the default is no. */
export async function confirmMove(message: string): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts');
  return confirm({ message, default: false });
}

const GAUGES: Array<[keyof QueueGauge, string, string]> = [
  ['ready', 'taskrecon_queue_ready', 'Jobs ready to run (Redis LLEN; RabbitMQ messages_ready).'],
  ['delayed', 'taskrecon_queue_delayed', 'Delayed jobs waiting for their time (Redis ZCARD of :delayed).'],
  [
    'delayedOverdue',
    'taskrecon_queue_delayed_overdue',
    'Delayed jobs past their time, not yet migrated to ready.',
  ],
  [
    'oldestOverdueSeconds',
    'taskrecon_queue_oldest_overdue_seconds',
    'How long the oldest overdue delayed job is past its time.',
  ],
  ['reserved', 'taskrecon_queue_reserved', 'Jobs reserved by a worker (Redis ZCARD of :reserved).'],
  [
    'reservedExpired',
    'taskrecon_queue_reserved_expired',
    'Reservations past their expiry: a worker died mid-job.',
  ],
  ['unacked', 'taskrecon_queue_unacked', 'Messages delivered and not acknowledged (RabbitMQ).'],
  ['consumers', 'taskrecon_queue_consumers', 'Consumers of the queue (RabbitMQ).'],
];

/** BullMQ's states, each one sample of `taskrecon_queue_jobs{state}` (they do not overlap: a sum is every job held). */
const BULLMQ_STATES = ['wait', 'active', 'delayed', 'prioritized', 'paused', 'failed', 'completed'] as const;

/** The queue gauges of `report --format prometheus`, one family per gauge, labels {broker, queue}; null gauges left out. */
export function queuePrometheusFamilies(section: QueueReportSection): Family[] {
  const families: Family[] = GAUGES.map(([field, name, help]) => ({
    name,
    help,
    samples: section.queues.flatMap((g) => {
      const value = g[field];
      return typeof value === 'number' ? [{ labels: { broker: g.broker, queue: g.queue }, value }] : [];
    }),
  }));
  families.push(
    {
      name: 'taskrecon_queue_jobs',
      help: "BullMQ jobs of the queue in each state, as BullMQ's Queue.getJobCounts counts them.",
      samples: section.queues.flatMap((g) =>
        g.bullmq
          ? BULLMQ_STATES.map((state) => ({
              labels: { broker: g.broker, queue: g.queue, state },
              value: (g.bullmq as NonNullable<QueueGauge['bullmq']>)[state],
            }))
          : [],
      ),
    },
    {
      name: 'taskrecon_queue_stalled',
      help: 'BullMQ active jobs whose lock is gone: their worker died mid-job.',
      samples: section.queues.flatMap((g) =>
        g.stalled === null ? [] : [{ labels: { broker: g.broker, queue: g.queue }, value: g.stalled }],
      ),
    },
  );
  return families.filter((f) => f.samples.length > 0);
}

/** The queue part of the `report` table. */
export function renderQueueReport(section: QueueReportSection): string {
  // BullMQ queues add their failed set; the column is there only when one is shown.
  const failed = section.queues.some((g) => g.failed !== null);
  const rows = section.queues.map((g) => [
    g.broker,
    printable(g.queue),
    g.ready,
    g.delayedOverdue,
    g.reservedExpired,
    g.unacked,
    g.consumers,
    ...(failed ? [g.failed] : []),
  ]);
  const out = [
    heading(`Queues: ${section.status}`),
    renderTable(
      [
        { title: 'broker', fit: 'whole' },
        { title: 'queue', fit: 'whole' },
        'ready',
        'overdue',
        'expired',
        'unacked',
        'consumers',
        ...(failed ? ['failed'] : []),
      ],
      rows,
    ),
  ];
  for (const b of section.breaches) {
    out.push(`${levelText(b)} ${b.broker}/${b.queue} ${b.metric} ${b.value} (limit ${b.threshold})`);
    if (b.acknowledged) out.push(ackLine(b.acknowledged));
  }
  for (const f of section.findings) {
    out.push(`${levelText(f)} ${f.code} ${f.broker}${f.queue === null ? '' : `/${f.queue}`}: ${f.message}`);
    if (f.acknowledged) out.push(ackLine(f.acknowledged));
  }
  for (const u of section.unreachable)
    out.push(`${chalk.yellow('WARN')} broker ${u.broker} not inspected: ${u.message}`);
  return out.join('\n');
}
