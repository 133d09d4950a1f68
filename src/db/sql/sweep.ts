import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import { AUDIT_TABLE } from '../ddl.js';
import { auditClock } from './audit.js';
import type { Dialect } from '../dialect.js';
import { placeholders } from '../task-sql.js';
import type { Queryable, Row } from '../types.js';
import { and, type Fragment } from '../fragment.js';

/**
 * Statements of the failure sweep: the failed rows it looks at, and what the audit log knows of
 * their jobs (sweep retries and second-failure alerts, keyed by the job identity in `event_id`).
 */

/** Audit action of a retry the sweep made (written by the compensate retry path, same transaction). */
export const SWEEP_RETRY_ACTION = 'sweep-retry';
/** Audit action recording that a second failure was alerted (so it is alerted once). */
export const SWEEP_ALERT_ACTION = 'sweep-alert';

/** Extra columns a failed-row page carries next to the whole row. */
export const SWEEP_COLUMNS = {
  failedAt: '__sweep_failed_at',
  /** The failure time with its fraction of a second. */
  failedAtExact: '__sweep_failed_at_exact',
  bizType: '__sweep_biz_type',
  lastError: '__sweep_last_error',
  queue: '__sweep_queue',
} as const;

export interface FailedPage {
  rows: Row[];
  /** The last id of the page (the next page starts after it), or undefined when it was the last. */
  next: TaskId | undefined;
}

/**
 * One page of failed rows whose failure time (`updatedAt`: failed_at, fail_time, updated_at) is at
 * or after `fromEpoch`, by id. A table with no such time column pages through every failed row.
 * In: source, epoch cutoff, cursor, limit. Out: whole rows plus SWEEP_COLUMNS. Reads only.
 */
export async function selectFailedPage(
  q: Queryable,
  source: BoundSource,
  fromEpoch: number,
  after: TaskId | undefined,
  limit: number,
): Promise<FailedPage> {
  const { sql } = source;
  const id = sql.expr('id') as string;
  const hasTime = sql.has('updatedAt');
  const parts: Fragment[] = [sql.statusIn(['failed'])];
  if (hasTime) parts.push(sql.timeCompare('updatedAt', '>=', fromEpoch));
  if (after !== undefined) parts.push({ sql: `${id} > ?`, params: [after] });
  const where = and(parts);
  const extra = (expr: string | undefined, alias: string) =>
    `${expr ?? 'NULL'} AS ${sql.dialect.quoteId(alias)}`;
  const rows = await q.query<Row>(
    `SELECT ${sql.table}.*, ${[
      extra(hasTime ? sql.epoch('updatedAt') : undefined, SWEEP_COLUMNS.failedAt),
      extra(hasTime ? sql.epoch('updatedAt', true) : undefined, SWEEP_COLUMNS.failedAtExact),
      extra(sql.expr('bizType'), SWEEP_COLUMNS.bizType),
      extra(sql.expr('lastError'), SWEEP_COLUMNS.lastError),
      extra(sql.expr('queue'), SWEEP_COLUMNS.queue),
    ].join(', ')}
       FROM ${sql.table} WHERE ${where.sql} ORDER BY ${id} LIMIT ${Math.trunc(limit)}`,
    where.params,
  );
  const last = rows[rows.length - 1];
  const lastId =
    last === undefined
      ? undefined
      : (last[
          sql.profile.fields.id && 'column' in sql.profile.fields.id ? sql.profile.fields.id.column : 'id'
        ] as TaskId);
  return { rows, next: rows.length < limit ? undefined : lastId };
}

/**
 * How many audit rows of `action` each job identity has in a task table.
 * In: task table, identities, action. Out: identity → count. Reads only (scans the audit rows of the action).
 */
export async function countAuditByIdentity(
  q: Queryable,
  dialect: Dialect,
  taskTable: string,
  identities: readonly string[],
  action: string,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const qi = (c: string) => dialect.quoteId(c);
  for (let i = 0; i < identities.length; i += 500) {
    const chunk = identities.slice(i, i + 500);
    const rows = await q.query<Row>(
      `SELECT ${qi('event_id')} AS identity, COUNT(*) AS n FROM ${qi(AUDIT_TABLE)}
        WHERE ${qi('action')} = ? AND ${qi('task_table')} = ? AND ${qi('event_id')} IN (${placeholders(chunk)})
        GROUP BY ${qi('event_id')}`,
      [action, taskTable, ...chunk],
    );
    for (const row of rows) out.set(String(row.identity), Number(row.n));
  }
  return out;
}

/** One earlier audit row of a job identity. */
export interface IdentityAudit {
  identity: string;
  taskId: string;
  atEpoch: number;
}

/**
 * The audit rows of `action` of these job identities in a task table: which row each was about and
 * when (epoch seconds with milliseconds), so the caller can tell which ones precede a given failure.
 * In: task table, identities, action, and the source (a broker's name) when the table name alone is
 * not the job's home (a BullMQ queue). Out: rows. Reads only (the audit rows of the action).
 */
export async function selectAuditByIdentity(
  q: Queryable,
  dialect: Dialect,
  taskTable: string,
  identities: readonly string[],
  action: string,
  source?: string,
): Promise<IdentityAudit[]> {
  const out: IdentityAudit[] = [];
  const qi = (c: string) => dialect.quoteId(c);
  const bySource = source === undefined ? '' : ` AND ${qi('source')} = ?`;
  for (let i = 0; i < identities.length; i += 500) {
    const chunk = identities.slice(i, i + 500);
    const rows = await q.query<Row>(
      `SELECT ${qi('event_id')} AS identity, ${qi('task_id')} AS task_id, ${auditClock(dialect).epoch} AS at_epoch
         FROM ${qi(AUDIT_TABLE)}
        WHERE ${qi('action')} = ? AND ${qi('task_table')} = ?${bySource} AND ${qi('event_id')} IN (${placeholders(chunk)})`,
      [action, taskTable, ...(source === undefined ? [] : [source]), ...chunk],
    );
    for (const row of rows)
      out.push({
        identity: String(row.identity),
        taskId: String(row.task_id),
        atEpoch: Number(row.at_epoch),
      });
  }
  return out;
}
