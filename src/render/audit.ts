import type { AuditEntry } from '../verbs/audit/index.js';
import { colorStatus } from './scan.js';
import { renderTable } from './table.js';
import { chalk, oneLine } from './terminal.js';

/** The audit log for humans: one line per change, oldest first. */
export function renderAudit(entries: Array<AuditEntry & { shard?: string }>, mayHaveMore: boolean): string {
  if (entries.length === 0) return chalk.dim('no audit entries match');
  const rows = entries.map((e) => [
    String(e.id),
    e.at.replace('T', ' ').replace(/(\.\d+)?Z$/, ''),
    e.operator,
    e.action,
    e.shard === undefined ? `${e.source}#${e.taskId}` : `${e.shard}:${e.taskId}`,
    `${e.from ? colorStatus(e.from) : '—'} → ${e.to ? colorStatus(e.to) : '—'}`,
    oneLine(e.reason, 50),
    e.runId.slice(0, 8),
  ]);
  // Who did what to which task and why stay on a narrow terminal; the run id, then the change
  // (the action mostly says it), then the operator give way first.
  const table = renderTable(
    [
      { title: 'id', fit: 'whole' },
      'at (UTC)',
      { title: 'operator', fit: 'whole', drop: 3 },
      { title: 'action', fit: 'whole' },
      { title: 'task', fit: 'whole' },
      { title: 'change', fit: 'whole', drop: 2 },
      'reason',
      { title: 'run', fit: 'whole', drop: 1 },
    ],
    rows,
  );
  const more = mayHaveMore ? `\n${chalk.dim(`the newest ${entries.length} shown; --limit 0 lists all`)}` : '';
  return table + more;
}

export const AUDIT_CSV_HEADER =
  'id,at,operator,host,action,source,table,taskId,eventId,from,to,reason,runId,before,after\n';

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The CSV header of a sharded source's audit log: a `shard` column last. */
const AUDIT_CSV_HEADER_SHARDS = `${AUDIT_CSV_HEADER.trimEnd()},shard\n`;

export function auditCsvLine(e: AuditEntry & { shard?: string }): string {
  const cells = [
    e.id,
    e.at,
    e.operator,
    e.host,
    e.action,
    e.source,
    e.table,
    e.taskId,
    e.eventId,
    e.from,
    e.to,
    e.reason,
    e.runId,
    e.before,
    e.after,
  ];
  return `${[...cells, ...(e.shard === undefined ? [] : [e.shard])].map(csvCell).join(',')}\n`;
}

export function auditNdjsonLine(e: AuditEntry): string {
  return `${JSON.stringify(e)}\n`;
}

/** A sharded source's audit log as CSV (with a `shard` column) or NDJSON (each line naming its shard). */
export function auditShardLines(
  entries: Array<AuditEntry & { shard: string }>,
  format: 'csv' | 'ndjson',
): string {
  const lines = entries.map((e) => (format === 'csv' ? auditCsvLine(e) : auditNdjsonLine(e)));
  return (format === 'csv' ? AUDIT_CSV_HEADER_SHARDS : '') + lines.join('');
}
