import { AUDIT_TABLE } from '../ddl.js';
import type { Dialect } from '../dialect.js';
import type { Fragment } from '../fragment.js';
import type { Queryable } from '../types.js';
import { taskIdsWhere } from './audit-batch.js';

/** What the console's audit log filters on (every audited change: tasks, broker moves and recoveries). */
export interface ConsoleAuditFilter {
  /** One source (a task source or a broker); every audited change when undefined. */
  source?: string;
  operator?: string;
  action?: string;
  taskId?: string;
  runId?: string;
}

/**
 * The ids of one page of the audit log, newest first, before `beforeId` (keyset on the primary
 * key, walked backwards). The entries themselves are then read with selectAuditPage().
 * In: filter, beforeId (undefined for the newest page), limit. Out: ids, newest first. Reads only.
 */
export async function selectAuditIdsBefore(
  db: Queryable,
  dialect: Dialect,
  filter: ConsoleAuditFilter,
  beforeId: number | undefined,
  limit: number,
): Promise<number[]> {
  const q = (c: string) => dialect.quoteId(c);
  const parts: Fragment[] = [];
  if (filter.source) parts.push({ sql: `${q('source')} = ?`, params: [filter.source] });
  if (filter.operator) parts.push({ sql: `${q('operator')} = ?`, params: [filter.operator] });
  if (filter.action) parts.push({ sql: `${q('action')} = ?`, params: [filter.action] });
  if (filter.taskId) parts.push(taskIdsWhere(dialect, [filter.taskId]));
  if (filter.runId) parts.push({ sql: `${q('run_id')} = ?`, params: [filter.runId] });
  if (beforeId !== undefined) parts.push({ sql: `${q('id')} < ?`, params: [beforeId] });
  const rows = await db.query<{ id: unknown }>(
    `SELECT ${q('id')} AS id FROM ${q(AUDIT_TABLE)} ${parts.length ? `WHERE ${parts.map((p) => `(${p.sql})`).join(' AND ')}` : ''} ORDER BY ${q('id')} DESC LIMIT ${Math.trunc(limit)}`,
    parts.flatMap((p) => p.params),
  );
  return rows.map((r) => Number(r.id));
}
