import { isSimpleJsonPath } from '../../core/json-path.js';
import { isLogicalStatus, LOGICAL_FIELDS, type LogicalField, type LogicalStatus } from '../../core/task.js';
import { configError, usageError } from '../../errors.js';
import type { CustomProfileConfig } from '../../config/schema.js';
import { BUILTIN_PROFILES, asyncTask } from './builtin.js';
import type { FieldRef, Profile } from './types.js';

export const PROFILE_NAMES = BUILTIN_PROFILES.map((p) => p.name);

export function builtinProfile(name: string): Profile {
  const profile = BUILTIN_PROFILES.find((p) => p.name === name);
  if (!profile) {
    throw usageError(
      `unknown profile '${name}'`,
      `Use one of: ${PROFILE_NAMES.join(', ')} (or describe the table in the config file).`,
    );
  }
  return profile;
}

/** Fields a source may read from a key inside a JSON column (text the commands only read and show). */
const JSON_PATH_FIELDS: readonly string[] = ['bizId', 'eventId'];

/** A `{ json, path }` column mapping, checked: a field that may be read so, and a simple JSON path. */
function jsonField(field: string, ref: { json: string; path: string }, where: string): FieldRef {
  if (!JSON_PATH_FIELDS.includes(field)) {
    throw configError(
      `${where}.columns.${field}: only ${JSON_PATH_FIELDS.join(' and ')} can be read from a JSON path`,
      `Map ${field} to a column name (or null).`,
    );
  }
  if (!isSimpleJsonPath(ref.path)) {
    throw configError(
      `${where}.columns.${field}.path: '${ref.path}' is not a simple JSON path`,
      "Write it as $ followed by keys and array indexes, e.g. path: '$.data.order_sn' or '$.items[0].sku' (keys of letters, digits and _).",
    );
  }
  return { json: ref.json, path: ref.path };
}

/**
 * Builds the profile of a source: a built-in one, with the config's overrides of table, columns,
 * statuses and time types laid over it. A source with no `profile` starts from `async-task`.
 * `where` names the config key in messages (e.g. `sources.custom`).
 */
export function profileFor(source: CustomProfileConfig, where: string): Profile {
  const base = source.profile ? builtinProfile(source.profile) : asyncTask;
  const fields: Partial<Record<LogicalField, FieldRef>> = { ...base.fields };
  for (const [field, column] of Object.entries(source.columns ?? {})) {
    if (!(LOGICAL_FIELDS as readonly string[]).includes(field)) {
      throw configError(
        `${where}.columns.${field}: unknown logical field`,
        `Use one of: ${LOGICAL_FIELDS.join(', ')}.`,
      );
    }
    if (field === 'status') continue;
    if (column === null) delete fields[field as LogicalField];
    else if (typeof column === 'string') fields[field as LogicalField] = { column };
    else fields[field as LogicalField] = jsonField(field, column, where);
  }
  let status = base.status;
  const statusRef = source.columns?.status;
  if (statusRef !== undefined && statusRef !== null && typeof statusRef !== 'string')
    jsonField('status', statusRef, where);
  const statusColumn = typeof statusRef === 'string' ? statusRef : undefined;
  if (source.statuses || statusColumn) {
    const values: Partial<Record<LogicalStatus, Array<string | number>>> = {};
    if (source.statuses) {
      for (const [logical, raw] of Object.entries(source.statuses)) {
        if (!isLogicalStatus(logical)) {
          throw configError(
            `${where}.statuses.${logical}: unknown status`,
            'Statuses are pending, processing, success, failed, compensated.',
          );
        }
        values[logical] = Array.isArray(raw) ? raw : [raw];
      }
    }
    const column = statusColumn ?? (base.status.kind === 'column' ? base.status.column : 'status');
    status = {
      kind: 'column',
      column,
      values: source.statuses ? values : base.status.kind === 'column' ? base.status.values : {},
    };
  }
  return {
    ...base,
    name: source.profile ?? (source.columns || source.statuses ? 'custom' : base.name),
    table: source.table ?? base.table,
    fields,
    status,
    timeTypes: { ...base.timeTypes, ...(source.timeTypes ?? {}) },
    defaultStuckAfterMs: base.defaultStuckAfterMs,
  };
}
