/**
 * The check of a list cursor that came back from outside (a console page link) before its page key
 * is bound: the key must look like what the table's next-retry column gives as a page key
 * (TaskSql.pageKeyForm()), so a tampered link is refused as bad input rather than reaching the
 * database as a value the column cannot take.
 */

import type { BoundSource } from '../../db/bind-source.js';
import type { ListCursor } from '../../db/port/index.js';
import { usageError } from '../../errors.js';
import { hasNumericId, parseTaskId } from '../../ops/task-id.js';

const INTEGER = /^-?\d{1,18}$/;
const DECIMAL = /^-?\d{1,18}(?:\.\d{1,9})?$/;
/** ISO date-time text as PostgreSQL (DateStyle ISO) or an application writes it. */
const TIME =
  /^(\d{4,6})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2})(?::?(\d{2})(?::?(\d{2}))?)?)?(?: BC)?$/;

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Whether `text` is a real date-time in ISO form (fields in range), or PostgreSQL's infinities. */
export function isTimeKey(text: string): boolean {
  if (text === 'infinity' || text === '-infinity') return true;
  const m = TIME.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute, second, offH, offM, offS] = m.slice(1).map((s) => Number(s ?? 0));
  return (
    (year as number) >= 1 &&
    (month as number) >= 1 &&
    (month as number) <= 12 &&
    (day as number) >= 1 &&
    (day as number) <= daysIn(year as number, month as number) &&
    (hour as number) <= 23 &&
    (minute as number) <= 59 &&
    (second as number) <= 59 &&
    (offH as number) <= 15 &&
    (offM as number) <= 59 &&
    (offS as number) <= 59
  );
}

function fits(key: number | string, form: ReturnType<BoundSource['sql']['pageKeyForm']>): boolean {
  if (typeof key === 'number') {
    if (form === 'integer') return Number.isSafeInteger(key);
    return form !== 'time' && Number.isFinite(key);
  }
  switch (form) {
    case 'integer':
      return INTEGER.test(key);
    case 'decimal':
      return DECIMAL.test(key);
    case 'time':
      return isTimeKey(key);
    case 'stored':
      return DECIMAL.test(key) || isTimeKey(key);
  }
}

/**
 * A cursor from outside, checked against the list's table.
 * In: the source, the cursor (shape already checked). Out: the cursor. Throws a usage error (exit 3,
 * a 400 in the console) when its page key cannot be one of this table's.
 */
export function checkListCursor(source: BoundSource, cursor: ListCursor | undefined): ListCursor | undefined {
  if (!cursor) return cursor;
  const refuse = (what: string) =>
    usageError(
      `after: the page link's ${what} is not one of ${source.profile.table}`,
      'Open the list again from its first page and follow its Next link.',
    );
  let id: ListCursor['id'];
  try {
    id = parseTaskId(source, String(cursor.id));
  } catch {
    throw refuse(`task id '${String(cursor.id)}'`);
  }
  const idText = String(cursor.id);
  // An integer id column takes at most a signed 64-bit integer; a longer one would fail the statement.
  const tooBig = hasNumericId(source) && (!/^\d+$/.test(idText) || BigInt(idText) > 9223372036854775807n);
  if (String(id) !== idText || tooBig) throw refuse(`task id '${idText}'`);
  if (cursor.nrt === null) return { nrt: null, id };
  const form = source.sql.has('nextRetryAt') ? source.sql.pageKeyForm('nextRetryAt') : undefined;
  if (form && fits(cursor.nrt, form)) return { nrt: cursor.nrt, id };
  throw refuse(`next-retry time '${String(cursor.nrt)}'`);
}
