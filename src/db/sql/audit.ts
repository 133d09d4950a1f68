import { AUDIT_TABLE } from '../ddl.js';
import type { Dialect } from '../dialect.js';
import type { Fragment } from '../fragment.js';
import { placeholders } from '../task-sql.js';
import type { Queryable, Row } from '../types.js';
import { expandAuditRecord, taskIdsWhere } from './audit-batch.js';

/**
 * Statements on `taskrecon_audit`, the append-only log of manual changes. taskrecon only ever
 * INSERTs and SELECTs here: no statement in this module (or anywhere) updates or deletes a row.
 * `created_at` is filled by the database clock (the column default), never by the client.
 */

/** One audit row as written: who did what to which task, the row before and after, and why. */
export interface AuditInsert {
  operator: string;
  host: string;
  action: string;
  source: string;
  taskTable: string;
  taskId: string;
  eventId: string | null;
  fromStatus: string | null;
  toStatus: string | null;
  /** The row as it was (JSON text), and as it is after the change (null when it was deleted). */
  beforeJson: string | null;
  afterJson: string | null;
  reason: string | null;
  runId: string;
}

/** One audit row as read back; `atEpoch` is epoch seconds with milliseconds. */
export interface AuditRecord extends AuditInsert {
  id: number;
  atEpoch: number;
}

export interface AuditFilter {
  source?: string;
  /** The task table: a task's history follows its table, whatever name a config gives the source. */
  taskTable?: string;
  taskIds?: string[];
  operator?: string;
  actions?: string[];
  sinceEpoch?: number;
  untilEpoch?: number;
  runId?: string;
}

/**
 * The audit time as epoch seconds with milliseconds, and a bound epoch cutoff comparable with the
 * bare column (index-friendly). MySQL stores TIMESTAMP(3); SQLite stores ISO-8601 text with `Z`.
 */
export function auditClock(dialect: Dialect): { epoch: string; param: string } {
  const col = dialect.quoteId('created_at');
  return { epoch: dialect.auditEpoch(col), param: dialect.auditEpochParam };
}

/** The columns an audit row is written with (id and created_at come from the database). */
export const AUDIT_WRITE_COLUMNS = [
  'operator',
  'host',
  'action',
  'source',
  'task_table',
  'task_id',
  'event_id',
  'from_status',
  'to_status',
  'before_json',
  'after_json',
  'reason',
  'run_id',
] as const;

/**
 * Appends one audit row. Run it on the transaction of the change it records, so both commit or neither.
 * In: the entry. Out: nothing. Side effect: one INSERT; created_at from the database clock.
 */
export async function insertAudit(tx: Queryable, dialect: Dialect, entry: AuditInsert): Promise<void> {
  const values = [
    entry.operator,
    entry.host,
    entry.action,
    entry.source,
    entry.taskTable,
    entry.taskId,
    entry.eventId,
    entry.fromStatus,
    entry.toStatus,
    entry.beforeJson,
    entry.afterJson,
    entry.reason,
    entry.runId,
  ];
  await tx.execute(
    `INSERT INTO ${dialect.quoteId(AUDIT_TABLE)} (${AUDIT_WRITE_COLUMNS.map((c) => dialect.quoteId(c)).join(', ')}) VALUES (${placeholders(AUDIT_WRITE_COLUMNS)})`,
    values,
  );
}

function auditWhere(dialect: Dialect, filter: AuditFilter): Fragment {
  const q = (c: string) => dialect.quoteId(c);
  const clock = auditClock(dialect);
  const parts: Fragment[] = [];
  if (filter.source !== undefined) parts.push({ sql: `${q('source')} = ?`, params: [filter.source] });
  if (filter.taskTable !== undefined)
    parts.push({ sql: `${q('task_table')} = ?`, params: [filter.taskTable] });
  if (filter.taskIds?.length) parts.push(taskIdsWhere(dialect, filter.taskIds));
  if (filter.operator !== undefined) parts.push({ sql: `${q('operator')} = ?`, params: [filter.operator] });
  if (filter.actions?.length) {
    parts.push({
      sql: `${q('action')} IN (${placeholders(filter.actions)})`,
      params: filter.actions,
    });
  }
  if (filter.runId !== undefined) parts.push({ sql: `${q('run_id')} = ?`, params: [filter.runId] });
  if (filter.sinceEpoch !== undefined)
    parts.push({ sql: `${q('created_at')} >= ${clock.param}`, params: [filter.sinceEpoch] });
  if (filter.untilEpoch !== undefined)
    parts.push({ sql: `${q('created_at')} < ${clock.param}`, params: [filter.untilEpoch] });
  if (parts.length === 0) return { sql: '1=1', params: [] };
  return { sql: parts.map((p) => `(${p.sql})`).join(' AND '), params: parts.flatMap((p) => p.params) };
}

function selectList(dialect: Dialect): string {
  const q = (c: string) => dialect.quoteId(c);
  return [
    `${q('id')} AS id`,
    `${auditClock(dialect).epoch} AS atEpoch`,
    ...AUDIT_WRITE_COLUMNS.map((c) => `${q(c)} AS ${q(c)}`),
  ].join(', ');
}

function toRecord(row: Row): AuditRecord {
  const text = (v: unknown): string | null =>
    v === null || v === undefined ? null : Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  return {
    id: Number(row.id),
    atEpoch: Number(row.atEpoch),
    operator: String(text(row.operator)),
    host: String(text(row.host)),
    action: String(text(row.action)),
    source: String(text(row.source)),
    taskTable: String(text(row.task_table)),
    taskId: String(text(row.task_id)),
    eventId: text(row.event_id),
    fromStatus: text(row.from_status),
    toStatus: text(row.to_status),
    beforeJson: text(row.before_json),
    afterJson: text(row.after_json),
    reason: text(row.reason),
    runId: String(text(row.run_id)),
  };
}

/**
 * One page of audit records in id order (chronological), after `afterId`; a job-batch row comes
 * expanded, one record per job (see audit-batch.ts), all with the row's id.
 * In: filter, afterId (0 for the first page), limit (rows), expand (false: job-batch rows as they
 * are, for a reader that expands them one at a time). Out: the records of up to `limit` rows (more
 * records than rows when a job-batch row is among them; read on after the last record's id).
 * Reads only.
 */
export async function selectAuditPage(
  db: Queryable,
  dialect: Dialect,
  filter: AuditFilter,
  afterId: number,
  limit: number,
  expand = true,
): Promise<AuditRecord[]> {
  const where = auditWhere(dialect, filter);
  const rows = await db.query<Row>(
    `SELECT ${selectList(dialect)} FROM ${dialect.quoteId(AUDIT_TABLE)} WHERE ${where.sql} AND ${dialect.quoteId('id')} > ? ORDER BY ${dialect.quoteId('id')} LIMIT ${Math.trunc(limit)}`,
    [...where.params, afterId],
  );
  const records = rows.map(toRecord);
  return expand ? records.flatMap((r) => expandAuditRecord(r, filter.taskIds)) : records;
}

/**
 * The newest `limit` audit records matching the filter, returned oldest first (job-batch rows
 * expanded, one record per job).
 * In: filter, limit (> 0). Out: up to `limit` records. Reads only (id index, backwards).
 */
export async function selectLatestAudit(
  db: Queryable,
  dialect: Dialect,
  filter: AuditFilter,
  limit: number,
): Promise<AuditRecord[]> {
  const where = auditWhere(dialect, filter);
  const rows = await db.query<Row>(
    `SELECT ${selectList(dialect)} FROM ${dialect.quoteId(AUDIT_TABLE)} WHERE ${where.sql} ORDER BY ${dialect.quoteId('id')} DESC LIMIT ${Math.trunc(limit)}`,
    where.params,
  );
  const records = rows
    .map(toRecord)
    .reverse()
    .flatMap((r) => expandAuditRecord(r, filter.taskIds));
  return records.slice(Math.max(0, records.length - Math.trunc(limit)));
}

/**
 * Whether the audit table exists.
 * In: nothing. Out: true/false. Reads the catalogue only.
 */
export async function auditTableExists(db: {
  columns(table: string): Promise<unknown[] | undefined>;
}): Promise<boolean> {
  return (await db.columns(AUDIT_TABLE)) !== undefined;
}

/**
 * Appends many audit rows in one statement (a batch of changes committed together).
 * In: entries. Out: nothing. Side effect: one multi-row INSERT; created_at from the database clock.
 */
export async function insertAuditBatch(
  tx: Queryable,
  dialect: Dialect,
  entries: readonly AuditInsert[],
): Promise<void> {
  if (entries.length === 0) return;
  const row = `(${placeholders(AUDIT_WRITE_COLUMNS)})`;
  const values = entries.flatMap((e) => [
    e.operator,
    e.host,
    e.action,
    e.source,
    e.taskTable,
    e.taskId,
    e.eventId,
    e.fromStatus,
    e.toStatus,
    e.beforeJson,
    e.afterJson,
    e.reason,
    e.runId,
  ]);
  await tx.execute(
    `INSERT INTO ${dialect.quoteId(AUDIT_TABLE)} (${AUDIT_WRITE_COLUMNS.map((c) => dialect.quoteId(c)).join(', ')}) VALUES ${entries.map(() => row).join(', ')}`,
    values,
  );
}

/**
 * The latest audit row of each given task whose action removed its row: forget (to `deleted`),
 * or a failed job re-pushed onto its queue (retry, or a sweep's sweep-retry). Explains why an id is no longer in the table.
 * In: source, task ids. Out: at most one row per task. Reads only (task index).
 */
export async function selectRemovals(
  db: Queryable,
  dialect: Dialect,
  source: string,
  taskIds: readonly string[],
): Promise<AuditRecord[]> {
  if (taskIds.length === 0) return [];
  const q = (c: string) => dialect.quoteId(c);
  const rows = await db.query<Row>(
    `SELECT ${selectList(dialect)} FROM ${q(AUDIT_TABLE)}
      WHERE ${q('source')} = ? AND ${q('task_id')} IN (${placeholders(taskIds)})
        AND (${q('to_status')} = 'deleted' OR ${q('action')} IN ('retry', 'sweep-retry'))
      ORDER BY ${q('id')}`,
    [source, ...taskIds],
  );
  const latest = new Map<string, AuditRecord>();
  for (const record of rows.map(toRecord)) latest.set(record.taskId, record);
  return [...latest.values()];
}
