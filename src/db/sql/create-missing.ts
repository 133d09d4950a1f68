import type { BoundSource } from '../bind-source.js';
import type { Dialect } from '../dialect.js';
import { columnOf } from '../profiles/types.js';
import { placeholders } from '../task-sql.js';
import type { Db, Queryable, Row } from '../types.js';

/**
 * Statements of `diff --create-missing`: the business rows of orphan keys, and the task row each
 * should have had, inserted so that a second insert of the same event id does nothing (the
 * table's UNIQUE event id: INSERT IGNORE on MySQL/MariaDB, ON CONFLICT DO NOTHING on SQLite).
 */

/**
 * The named columns of the business rows with these keys (the first row of a key wins).
 * In: business table, key column, columns, keys. Out: key → row. Reads only (the key's index).
 */
export async function selectBusinessColumns(
  db: Db,
  table: string,
  keyColumn: string,
  columns: readonly string[],
  keys: readonly string[],
): Promise<Map<string, Row>> {
  const q = (c: string) => db.dialect.quoteId(c);
  const out = new Map<string, Row>();
  for (let i = 0; i < keys.length; i += 500) {
    const chunk = keys.slice(i, i + 500);
    const rows = await db.query<Row>(
      `SELECT ${q(keyColumn)} AS __key, ${columns.map(q).join(', ')} FROM ${q(table)} WHERE ${q(keyColumn)} IN (${placeholders(chunk)})`,
      chunk,
    );
    for (const row of rows) {
      const key = String(row.__key);
      delete row.__key;
      if (!out.has(key)) out.set(key, row);
    }
  }
  return out;
}

export interface NewTask {
  bizType: string;
  bizId: string;
  eventId: string;
  payload: string;
}

/** The logical fields a task table needs for a created row, by the column the profile maps them to. */
export const CREATE_FIELDS = ['bizType', 'bizId', 'eventId', 'payload'] as const;

function insertPrefix(dialect: Dialect): { verb: string; suffix: string } {
  return dialect.insertUnlessConflict;
}

/**
 * Inserts one pending task due now (attempts 0, created/updated now by the database clock) unless
 * a row with its event id exists. In: the task. Out: the new id, or null when it existed.
 * Side effect: at most one INSERT.
 */
export async function insertTaskIfAbsent(
  tx: Queryable,
  source: BoundSource,
  task: NewTask,
): Promise<number | string | null> {
  const { sql, profile } = source;
  const q = (c: string) => sql.dialect.quoteId(c);
  const columns: string[] = [];
  const values: string[] = [];
  const params: unknown[] = [];
  const bind = (column: string | undefined, value: unknown) => {
    if (!column) return;
    columns.push(q(column));
    values.push('?');
    params.push(value);
  };
  const now = (field: 'nextRetryAt' | 'createdAt' | 'updatedAt') => {
    const column = columnOf(profile, field);
    if (!column) return;
    columns.push(q(column));
    values.push(sql.nowOf(field));
  };
  for (const field of CREATE_FIELDS) bind(columnOf(profile, field), task[field]);
  if (profile.status.kind === 'column') bind(profile.status.column, sql.rawStatus('pending'));
  bind(columnOf(profile, 'attempts'), 0);
  now('nextRetryAt');
  now('createdAt');
  now('updatedAt');
  const { verb, suffix } = insertPrefix(sql.dialect);
  const result = await tx.execute(
    `${verb} ${sql.table} (${columns.join(', ')}) VALUES (${values.join(', ')})${suffix}`,
    params,
  );
  return result.affectedRows === 1 ? result.insertId : null;
}
