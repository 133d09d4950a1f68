import type { LogicalField, TimeType } from '../core/task.js';
import type { Profile } from './profiles/types.js';
import type { ColumnInfo } from './types.js';

/**
 * What the live table tells about a profile's columns beyond their time types: how the SQL of one
 * bound source (TaskSql) reads its expiry, its error and its ids.
 */

/** A profile's per-row expiry (its `stuck` model) resolved against the live table's columns. */
export interface ExpiryStuck {
  started: string;
  startedType: TimeType;
  expiry: { column: string; unit: 'seconds' | 'interval' };
  heartbeat?: { at: string; atType: TimeType; seconds: string };
}

export interface LiveColumns {
  /** Set for profiles whose rows carry their own expiry (pg-boss). */
  expiryStuck?: ExpiryStuck;
  /** Fields stored in a JSON column and read as its text (pg-boss's `output` as the error). */
  jsonAsText?: readonly LogicalField[];
  /**
   * Fields stored in a PostgreSQL array column and read as the text of its last element
   * (River's and Oban's `errors`, one JSON object per failed attempt: the latest error).
   */
  arrayLastAsText?: readonly LogicalField[];
  /**
   * The id column holds text (a varchar, a uuid): ids stay text even when they are digits, as
   * the table orders and compares them ("0838" < "1757" < "919"; "0838" and "838" are two rows).
   */
  textId?: boolean;
}

/** A profile on a live table: what the helpers below read. */
interface Mapped {
  profile: Profile;
  columns: readonly ColumnInfo[];
}

const INTEGER = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint']);
/**
 * Text types an id column may have. Only these: a type this does not know (SQLite takes any name,
 * or none) keeps the ids as they were read, numbers where they are numbers.
 */
const TEXT = new Set(['char', 'varchar', 'text', 'tinytext', 'mediumtext', 'longtext', 'uuid']);

/** The live column the profile's id maps to, when it maps to a column. */
export function idColumnOf(source: Mapped): ColumnInfo | undefined {
  const ref = source.profile.fields.id;
  if (!ref || !('column' in ref)) return undefined;
  const name = ref.column.toLowerCase();
  return source.columns.find((c) => c.name.toLowerCase() === name);
}

/** Whether the table's id column holds whole numbers: ids compare as integers, ranges of them make sense. */
export function hasNumericId(source: Mapped): boolean {
  const type = idColumnOf(source)?.dataType;
  return type !== undefined && INTEGER.has(type);
}

/** Whether the table's id column holds text (LiveColumns.textId): a char, varchar, text or uuid column. */
export function hasTextId(source: Mapped): boolean {
  const type = idColumnOf(source)?.dataType;
  return type !== undefined && TEXT.has(type);
}
