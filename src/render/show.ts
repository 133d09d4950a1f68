import type { ShowResult } from '../verbs/show/index.js';
import { colorStatus } from './scan.js';
import { heading, renderFields, renderTable } from './table.js';
import { chalk, isStdoutTty, printable } from './terminal.js';
import { grouped } from '../core/grouped.js';

/** On a terminal, a payload or last error longer than this is cut (piped output and --json keep it whole). */
export const TTY_TEXT_CHARS = 8000;

/** A long text value: control characters escaped, cut on a TTY unless `full`. */
function block(text: string, full: boolean): string {
  const limit = full || !isStdoutTty() ? undefined : TTY_TEXT_CHARS;
  const shown = printable(text, limit);
  const cut = limit !== undefined && text.length > limit;
  const body = shown
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
  return cut
    ? `${body}\n${chalk.dim(`  … ${grouped(text.length - limit + 1)} more characters (--full, a pipe or --json shows all)`)}`
    : body;
}

/** The human view of one task: its fields, payload, last error and audit history. */
export function renderShow(result: ShowResult, options: { full: boolean }): string {
  const { task } = result;
  const out: string[] = [];
  out.push(
    `${chalk.bold('source')} ${result.source.name} (${result.source.profile}, table ${result.source.table}) on ${result.source.db}`,
  );
  out.push('');
  const fields: Array<[string, string | number | null]> = [
    ['id', task.shard === undefined ? String(task.id) : `${task.shard}:${task.id}`],
    [
      'status',
      `${colorStatus(task.status)}${task.rawStatus !== undefined && task.rawStatus !== null && String(task.rawStatus) !== task.status ? chalk.dim(` (stored ${printable(String(task.rawStatus), 40)})`) : ''}`,
    ],
    ['biz type', task.bizType === null ? null : printable(task.bizType, 200)],
    ['biz id', task.bizId === null ? null : printable(task.bizId, 200)],
    ['event id', task.eventId === null ? null : printable(task.eventId, 200)],
    [
      'attempts',
      task.attempts === null
        ? null
        : `${task.attempts}${task.maxAttempts != null ? ` of ${task.maxAttempts}` : ''}`,
    ],
    ['next retry', task.nextRetryAt],
    ['created', task.createdAt],
    ['updated', task.updatedAt],
  ];
  // Jobs of a queue framework: which queue and connection they ran on (a task table has neither).
  if ((task.queue ?? null) !== null || (task.connection ?? null) !== null) {
    fields.push(['queue', task.queue == null ? null : printable(task.queue, 200)]);
    fields.push(['connection', task.connection == null ? null : printable(task.connection, 200)]);
  }
  out.push(renderFields(fields));
  out.push('');
  const payloadTitle = task.payloadFormat === 'text' ? 'Payload (not JSON: shown as text)' : 'Payload';
  out.push(heading(payloadTitle));
  if (task.payloadText === null || task.payloadText === '') out.push(chalk.dim('  none'));
  else
    out.push(
      block(
        task.payloadFormat === 'json' ? JSON.stringify(task.payload, null, 2) : task.payloadText,
        options.full,
      ),
    );
  out.push('');
  out.push(heading('Last error'));
  out.push(
    task.lastError === null || task.lastError === ''
      ? chalk.dim('  none')
      : block(task.lastError, options.full),
  );
  out.push('');
  out.push(heading('Audit history'));
  if (result.audit.length === 0) {
    out.push(chalk.dim('  no manual changes recorded'));
  } else {
    out.push(
      renderTable(
        [
          'at',
          { title: 'operator', fit: 'whole' },
          { title: 'host', drop: 1 },
          { title: 'action', fit: 'whole' },
          { title: 'from → to', fit: 'whole' },
          'reason',
        ],
        result.audit.map((e) => [
          e.at,
          printable(e.operator, 60),
          printable(e.host, 60),
          e.action,
          `${e.from ?? '—'} → ${e.to ?? '—'}`,
          e.reason === null ? '' : printable(e.reason, 80),
        ]),
      ),
    );
  }
  return out.join('\n');
}
