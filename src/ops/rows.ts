import { valueAtPath } from '../core/json-path.js';
import type { LogicalField, LogicalStatus, TaskId } from '../core/task.js';
import type { TaskSql } from '../db/task-sql.js';
import type { Row } from '../db/types.js';
import { EXECUTION_STATE } from '../db/task-sql.js';

/**
 * Reading whole rows (SELECT *) the way the profile maps them: the value of a column whatever the
 * case of its name, the logical status, the event id, and the row as JSON for the audit.
 */

export function column(row: Row, name: string): unknown {
  if (name in row) return row[name];
  const lower = name.toLowerCase();
  const key = Object.keys(row).find((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : row[key];
}

export function rowId(sql: TaskSql, row: Row): TaskId {
  const ref = sql.profile.fields.id;
  return sql.id(ref && 'column' in ref ? column(row, ref.column) : row.id);
}

export function rowStatus(sql: TaskSql, row: Row): LogicalStatus | 'unknown' {
  const model = sql.profile.status;
  if (model.kind === 'constant') return model.status;
  if (model.kind === 'executions') return sql.logicalStatus(column(row, EXECUTION_STATE));
  const raw = column(row, model.column);
  if (model.kind === 'reservation') return raw === null || raw === undefined ? 'pending' : 'processing';
  return sql.logicalStatus(raw);
}

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return Buffer.isBuffer(value)
    ? value.toString('utf8')
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);
}

export function rowEventId(sql: TaskSql, row: Row): string | null {
  return rowField(sql, row, 'eventId');
}

/** A logical field of a whole row as text (a column, or a path in a JSON column); null when absent. */
export function rowField(sql: TaskSql, row: Row, field: LogicalField): string | null {
  const ref = sql.profile.fields[field];
  if (!ref) return null;
  if ('column' in ref) return text(column(row, ref.column));
  if ('execution' in ref) return null;
  const json = column(row, ref.json);
  try {
    const parsed: unknown = typeof json === 'string' ? JSON.parse(json) : json;
    return text(valueAtPath(parsed, ref.path) ?? null);
  } catch {
    return null;
  }
}

/** The whole row as JSON text: binary as UTF-8 text, big integers as strings. Restorable by hand from the audit. */
export function rowJson(row: Row): string {
  return JSON.stringify(row, (_key, value: unknown) => {
    if (typeof value === 'bigint') return value.toString();
    if (
      value &&
      typeof value === 'object' &&
      (value as { type?: string }).type === 'Buffer' &&
      Array.isArray((value as { data?: unknown }).data)
    ) {
      return Buffer.from((value as { data: number[] }).data).toString('utf8');
    }
    return value;
  });
}
