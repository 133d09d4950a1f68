import type { TaskId } from '../core/task.js';
import type { BoundSource } from '../db/bind-source.js';
import { hasNumericId, idColumnOf } from '../db/live-columns.js';
import { usageError } from '../errors.js';

/** Which key `show` looks a task up by, and the value as the table compares it. */
export interface TaskKey {
  key: 'id' | 'eventId';
  value: TaskId;
}

export { hasNumericId };

/** The id column when it holds whole numbers. */
function idColumn(source: BoundSource) {
  return hasNumericId(source) ? idColumnOf(source) : undefined;
}

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** The id column when it holds uuids (pg-boss's jobs): text that is no uuid cannot name a row. */
function uuidColumn(source: BoundSource) {
  const column = idColumnOf(source);
  return column?.dataType === 'uuid' ? column : undefined;
}

/**
 * The id as the table compares it: an integer for an integer id column. Text that cannot be an
 * integer id is taken as an event id (Laravel's uuid, async_task's event_id) when the profile has
 * one; otherwise it is refused.
 */
export function parseTaskKey(source: BoundSource, input: string): TaskKey {
  const column = idColumn(source);
  const text = input.trim();
  if (!column) {
    if (uuidColumn(source) && !UUID.test(text)) {
      throw usageError(
        `'${input}' is not a task id: ${source.profile.table}.${uuidColumn(source)?.name} holds uuids`,
        'Pass the id as `scan` lists it, e.g. `taskrecon show 0b6a4c1e-5d0e-4f4a-9d55-6f0c0a6f2b8e`.',
      );
    }
    return { key: 'id', value: text };
  }
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
