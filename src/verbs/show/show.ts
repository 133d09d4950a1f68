import type { TaskDetail, TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store } from '../../db/port/index.js';
import { toText } from '../../db/task-sql.js';
import { TaskreconError, usageError } from '../../errors.js';
import { auditHistory, type AuditEntry } from '../audit/index.js';
import { sourceInfo, type SourceInfo } from '../scan/index.js';

const NUMERIC_ID = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint']);

/** The task of `show`: every field, the payload parsed when it is JSON, the last error whole. */
export interface ShownTask extends TaskDetail {
  /** `json` when payloadText parses as JSON (then `payload` is the parsed value), `text` when not, null when empty. */
  payloadFormat: 'json' | 'text' | null;
}

/** The JSON contract of `show`. */
export interface ShowResult {
  source: SourceInfo;
  task: ShownTask;
  /** Manual changes to this task, oldest first (taskrecon_audit). */
  audit: AuditEntry[];
}

/** Which key `show` looks a task up by, and the value as the table compares it. */
export interface TaskKey {
  key: 'id' | 'eventId';
  value: TaskId;
}

/** Whether the table's id column holds whole numbers (ids compare as integers, ranges make sense). */
export function hasNumericId(source: BoundSource): boolean {
  return idColumn(source) !== undefined;
}

function idColumn(source: BoundSource) {
  const ref = source.profile.fields.id;
  const column =
    ref && 'column' in ref
      ? source.columns.find((c) => c.name.toLowerCase() === ref.column.toLowerCase())
      : undefined;
  return column && NUMERIC_ID.has(column.dataType) ? column : undefined;
}

/**
 * The id as the table compares it: an integer for an integer id column. Text that cannot be an
 * integer id is taken as an event id (Laravel's uuid, async_task's event_id) when the profile has
 * one; otherwise it is refused.
 */
export function parseTaskKey(source: BoundSource, input: string): TaskKey {
  const column = idColumn(source);
  const text = input.trim();
  if (!column) return { key: 'id', value: text };
  if (/^\d+$/.test(text))
    return { key: 'id', value: Number.isSafeInteger(Number(text)) ? Number(text) : text };
  if (source.sql.has('eventId')) return { key: 'eventId', value: text };
  throw usageError(
    `'${input}' is not a task id: ${source.profile.table}.${column.name} holds whole numbers`,
    'Pass the id as `scan` lists it, e.g. `taskrecon show 42`.',
  );
}

/** A task id as the table compares it (an integer for an integer id column); refused when it cannot be one. */
export function parseTaskId(source: BoundSource, input: string): TaskId {
  const parsed = parseTaskKey(source, input);
  if (parsed.key === 'id') return parsed.value;
  const ref = source.profile.fields.id;
  throw usageError(
    `'${input}' is not a task id: ${source.profile.table}.${ref && 'column' in ref ? ref.column : 'id'} holds whole numbers`,
    'Pass ids as `scan` lists them, e.g. 42.',
  );
}

/** Splits a payload into its parsed JSON value and its text; a payload that is not JSON stays text. */
export function readPayload(raw: unknown): Pick<ShownTask, 'payload' | 'payloadText' | 'payloadFormat'> {
  // A driver may hand a JSON column over already parsed.
  if (raw !== null && typeof raw === 'object' && !Buffer.isBuffer(raw)) {
    return { payload: raw, payloadText: JSON.stringify(raw), payloadFormat: 'json' };
  }
  const text = toText(raw);
  if (text === null || text === '') return { payload: null, payloadText: text, payloadFormat: null };
  try {
    return { payload: JSON.parse(text) as unknown, payloadText: text, payloadFormat: 'json' };
  } catch {
    return { payload: null, payloadText: text, payloadFormat: 'text' };
  }
}

/** One task with its audit history; exit 3 when no row has the id. */
export async function showTask(source: BoundSource, input: string): Promise<ShowResult> {
  const { key, value } = parseTaskKey(source, input);
  const row = await store.tasks.selectTaskBy(source, key, value);
  if (!row) {
    const history = key === 'id' ? await auditHistory(source.db, source.profile.table, value) : [];
    const last = history[history.length - 1];
    throw new TaskreconError(
      `task ${input} not found in ${source.profile.table} (source ${source.name})${key === 'eventId' ? ', by id or event id' : ''}`,
      {
        code: 'NOT_FOUND',
        hint: last
          ? `The audit log says ${last.operator} did '${last.action}' on it at ${last.at}${last.to ? ` (→ ${last.to})` : ''}.`
          : 'List tasks with `taskrecon scan`; the id is the one its lists show.',
      },
    );
  }
  const task = source.sql.toTask(row);
  const payload = readPayload(row[row.length - 1]);
  return {
    source: sourceInfo(source),
    task: { ...task, ...payload },
    audit: await auditHistory(source.db, source.profile.table, task.id),
  };
}
