// Over 300 lines: the same-server diff statements (missing, unsettled, orphan, duplicate walks), one module so their joins agree.
import type { Dialect } from '../dialect.js';
import type { Fragment } from '../fragment.js';
import { placeholders } from '../task-sql.js';
import type { Queryable } from '../types.js';
import { keyMatch, type KeyExpr } from './diff-keys.js';

/**
 * The statements of a same-server diff: both tables on one connection, so the database joins
 * them. The task table is walked by primary-key ranges for missing tasks (done tasks LEFT JOINed
 * to the business key, never NOT EXISTS and never grouped: MariaDB plans the LEFT JOIN … IS NULL
 * form as a "Not exists" index anti-join) and unsettled ones (open tasks with business rows); the
 * business table is walked in key order for orphans and for duplicated keys, whose tasks are then
 * looked up. Every statement reads only.
 *
 * The business table always enters as a derived table with one column, `taskrecon_bk`, so the
 * rule's `where` is evaluated against the business table alone (no column of the task table is
 * in its scope) and no task column name can become ambiguous; MariaDB and SQLite merge it, so
 * the key index is still the one used.
 */

/** The task side of a rule: expressions of the bound source, quoted. */
export interface TaskSide {
  dialect: Dialect;
  table: string;
  id: string;
  key: KeyExpr;
  eventId: string | null;
  bizType: string;
  bizTypeValue: string;
  rawStatus: string;
  /** CASE expression: 1 for a done status, 2 for an open (failed/pending) one, 0 otherwise. */
  role: Fragment;
  /** Predicate: the task's status is one of the rule's done statuses (role 1). */
  done: Fragment;
  /** Predicate: the task is open — failed or pending and not done (role 2). */
  open: Fragment;
  /** The --since/--until window on the task table ('1=1' without one). */
  window: Fragment;
}

/** The business side of a rule on the same server. */
export interface BusinessSide {
  table: string;
  key: string;
  keyIsInt: boolean;
  where?: string;
}

export const BK = 'taskrecon_bk';

export function businessDerived(b: BusinessSide): string {
  return `(SELECT ${b.key} AS ${BK} FROM ${b.table}${b.where ? ` WHERE (${b.where})` : ''})`;
}

/** Role codes of TaskSide.role. */
export const ROLE_DONE = 1;
export const ROLE_OPEN = 2;

/**
 * The smallest and largest id of the task table (the walk's end is fixed once: rows inserted
 * during the run are not looked at).
 * In: task side. Out: [min, max] or undefined for an empty table. Reads the primary key's ends.
 */
export async function taskIdRange(q: Queryable, t: TaskSide): Promise<[number, number] | undefined> {
  const rows = await q.query<{ lo: unknown; hi: unknown }>(
    `SELECT MIN(${t.id}) AS lo, MAX(${t.id}) AS hi FROM ${t.table}`,
  );
  const lo = rows[0]?.lo;
  const hi = rows[0]?.hi;
  if (lo === null || lo === undefined || hi === null || hi === undefined) return undefined;
  return [Number(lo), Number(hi)];
}

/**
 * The first id ≥ `from`, so a chunk never starts inside a gap.
 * In: task side, from. Out: an id or undefined. One primary-key seek.
 */
export async function nextTaskId(q: Queryable, t: TaskSide, from: number): Promise<number | undefined> {
  const rows = await q.query<{ id: unknown }>(
    `SELECT MIN(${t.id}) AS id FROM ${t.table} WHERE ${t.id} >= ?`,
    [from],
  );
  const id = rows[0]?.id;
  return id === null || id === undefined ? undefined : Number(id);
}

/** An id range of the task walk (both ends included); undefined: the whole table. */
export type IdRange = { lo: number; hi: number } | undefined;

function idRangeSql(t: TaskSide, range: IdRange): Fragment {
  return range
    ? { sql: ` AND ${t.id} >= ? AND ${t.id} <= ?`, params: [range.lo, range.hi] }
    : { sql: '', params: [] };
}

/** A done task with no business row. */
export interface MissingRow {
  id: unknown;
  k: unknown;
  e: unknown;
  s: unknown;
}

/**
 * One chunk of the task walk, done side: the rule's done tasks with ids in the range and inside
 * the window that no business row matches — each one `missing`, whatever other tasks share its
 * key. The LEFT JOIN … IS NULL form without GROUP BY is what MariaDB plans as a "Not exists"
 * index anti-join. In: sides, id range. Out: tasks (id, key, event id, raw status). Reads a
 * primary-key range and the business key index.
 */
export async function missingChunk(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  range: IdRange,
): Promise<MissingRow[]> {
  return missingAmong(q, t, b, idRangeSql(t, range));
}

/**
 * The tasks with the given ids that are missing (as missingChunk decides): how the merge walk
 * checks the tasks whose key weight matched no business row's. In: sides, ids. Out: tasks.
 * Reads the primary key and the business key index.
 */
export async function missingByIds(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  ids: readonly unknown[],
): Promise<MissingRow[]> {
  if (ids.length === 0) return [];
  return missingAmong(q, t, b, {
    sql: ` AND ${t.id} IN (${placeholders(ids)})`,
    params: [...ids],
  });
}

async function missingAmong(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  tasks: Fragment,
): Promise<MissingRow[]> {
  const match = keyMatch(t.dialect, { sql: `b.${BK}`, isInt: b.keyIsInt }, t.key);
  return q.query<MissingRow>(
    `SELECT ${t.id} AS id, ${t.key.sql} AS k, ${t.eventId ?? 'NULL'} AS e, ${t.rawStatus} AS s` +
      ` FROM ${t.table} LEFT JOIN ${businessDerived(b)} b ON ${match}` +
      ` WHERE ${t.bizType} = ?${tasks.sql} AND (${t.done.sql}) AND (${t.window.sql}) AND b.${BK} IS NULL`,
    [t.bizTypeValue, ...tasks.params, ...t.done.params, ...t.window.params],
  );
}

/** A task with business rows, and how many: a finding or not depending on its siblings. */
export interface CandidateRow extends MissingRow {
  n: unknown;
}

/**
 * One chunk of the task walk, open side: the rule's open (failed/pending) tasks with ids in the
 * range and inside the window that business rows match, with the count of those rows; whether
 * one is `unsettled` depends on the done tasks sharing its key (keySiblings). In: sides, id
 * range. Out: tasks (id, key, event id, raw status, row count). Reads the status index or the
 * primary-key range, and the business key index.
 */
export async function unsettledCandidates(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  range: IdRange,
): Promise<CandidateRow[]> {
  const match = keyMatch(t.dialect, { sql: `b.${BK}`, isInt: b.keyIsInt }, t.key);
  const ids = idRangeSql(t, range);
  return q.query<CandidateRow>(
    `SELECT ${t.id} AS id, MIN(${t.key.sql}) AS k, ${t.eventId ? `MIN(${t.eventId})` : 'NULL'} AS e, MIN(${t.rawStatus}) AS s, COUNT(*) AS n` +
      ` FROM ${t.table} ${t.dialect.drivingJoin} ${businessDerived(b)} b ON ${match}` +
      ` WHERE ${t.bizType} = ?${ids.sql} AND (${t.open.sql}) AND (${t.window.sql})` +
      ` GROUP BY ${t.id}`,
    [t.bizTypeValue, ...ids.params, ...t.open.params, ...t.window.params],
  );
}

/**
 * How many of the rule's tasks a chunk holds (tasksChecked).
 * In: task side, id range. Out: a count. Reads the primary-key range the chunk just read.
 */
export async function countChunkTasks(q: Queryable, t: TaskSide, range: IdRange): Promise<number> {
  const ids = idRangeSql(t, range);
  const rows = await q.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM ${t.table} WHERE ${t.bizType} = ?${ids.sql} AND (${t.window.sql})`,
    [t.bizTypeValue, ...ids.params, ...t.window.params],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Tasks sharing a key: how many, and how many of them are done. */
export interface SiblingRow {
  k: unknown;
  tasks: unknown;
  done: unknown;
}

/**
 * For suspects whose classification depends on other tasks with the same key: the number of
 * the rule's tasks per key (any status, any time) and of done ones.
 * In: task side, keys. Out: one row per key. Reads the (biz type, key) index.
 */
export async function keySiblings(
  q: Queryable,
  t: Pick<TaskSide, 'table' | 'key' | 'role' | 'bizType' | 'bizTypeValue'>,
  keys: readonly unknown[],
): Promise<SiblingRow[]> {
  if (keys.length === 0) return [];
  return q.query<SiblingRow>(
    `SELECT MIN(${t.key.sql}) AS k, COUNT(*) AS tasks, SUM(CASE WHEN (${t.role.sql}) = ${ROLE_DONE} THEN 1 ELSE 0 END) AS done
       FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key.sql} IN (${placeholders(keys)}) GROUP BY ${t.key.sql}`,
    [...t.role.params, t.bizTypeValue, ...keys],
  );
}

/**
 * The upper bound of the next business-walk chunk: the key `offset` rows after `after` in key order
 * (after = undefined: from the first key). In: business side, after, offset. Out: a key, or
 * undefined when fewer rows remain (the chunk then runs to the end). Reads the key index.
 */
export async function businessKeyBound(
  q: Queryable,
  b: BusinessSide,
  after: unknown,
  offset: number,
): Promise<{ key: unknown } | undefined> {
  const from = after === undefined ? `${BK} IS NOT NULL` : `${BK} > ?`;
  const rows = await q.query<{ k: unknown }>(
    `SELECT ${BK} AS k FROM ${businessDerived(b)} b WHERE ${from} ORDER BY ${BK} LIMIT 1 OFFSET ${Math.max(0, Math.trunc(offset))}`,
    after === undefined ? [] : [after],
  );
  return rows.length === 0 ? undefined : { key: rows[0]?.k };
}

export interface OrphanRow {
  k: unknown;
  n: unknown;
}

/**
 * One chunk of the orphan walk: business keys in (after, upTo] (open ends when undefined) with
 * no task of the rule's biz type at all, with their row counts. A key never spans two chunks.
 * In: sides, bounds. Out: orphan keys. Reads the business key index and the task (biz type, key) index.
 */
export async function orphanChunk(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  after: unknown,
  upTo: unknown,
): Promise<OrphanRow[]> {
  return orphansAmong(q, t, b, keyBounds(after, upTo));
}

/**
 * Which of `keys` (business keys as the server sent them) are orphans, with their row counts:
 * how the merge walk checks the keys whose weight matched no task's. In: sides, keys. Out: orphan
 * keys. Reads the business key index and the task (biz type, key) index.
 */
export async function orphansByKeys(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  keys: readonly unknown[],
): Promise<OrphanRow[]> {
  if (keys.length === 0) return [];
  return orphansAmong(q, t, b, { sql: `b.${BK} IN (${placeholders(keys)})`, params: [...keys] });
}

async function orphansAmong(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  keys: Fragment,
): Promise<OrphanRow[]> {
  const match = keyMatch(t.dialect, t.key, { sql: `b.${BK}`, isInt: b.keyIsInt });
  return q.query<OrphanRow>(
    `SELECT b.${BK} AS k, COUNT(*) AS n FROM ${businessDerived(b)} b LEFT JOIN ${t.table} ON ${t.bizType} = ? AND ${match}
      WHERE ${keys.sql} AND ${t.id} IS NULL GROUP BY b.${BK}`,
    [t.bizTypeValue, ...keys.params],
  );
}

/** The business keys of a chunk of the business walk, (after, upTo], NULL keys never in it. */
function keyBounds(after: unknown, upTo: unknown): Fragment {
  return keyRange(`b.${BK}`, after, upTo);
}

/** Values of `expr` in (after, upTo] (open ends when undefined), NULL never in it. */
export function keyRange(expr: string, after: unknown, upTo: unknown): Fragment {
  const sql = [
    after === undefined ? `${expr} IS NOT NULL` : `${expr} > ?`,
    ...(upTo === undefined ? [] : [`${expr} <= ?`]),
  ];
  return {
    sql: sql.join(' AND '),
    params: [...(after === undefined ? [] : [after]), ...(upTo === undefined ? [] : [upTo])],
  };
}

/**
 * Business rows whose key is NULL: they can belong to no task, so they are orphans.
 * In: business side. Out: a count. Reads the key index.
 */
export async function nullKeyBusinessRows(q: Queryable, b: BusinessSide): Promise<number> {
  const rows = await q.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM ${businessDerived(b)} b WHERE ${BK} IS NULL`,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * One chunk of the duplicate walk: business keys in (after, upTo] (open ends when undefined)
 * held by more than one business row. A key never spans two chunks.
 * In: business side, bounds. Out: keys. Reads the business key index in order.
 */
export async function duplicateKeys(
  q: Queryable,
  b: BusinessSide,
  after: unknown,
  upTo: unknown,
): Promise<unknown[]> {
  const bounds = keyBounds(after, upTo);
  const rows = await q.query<{ k: unknown }>(
    `SELECT b.${BK} AS k FROM ${businessDerived(b)} b WHERE ${bounds.sql} GROUP BY b.${BK} HAVING COUNT(*) > 1`,
    bounds.params,
  );
  return rows.map((r) => r.k);
}

/**
 * The rule's done tasks inside the window matching one of `keys` (business keys as
 * duplicateKeys returned them) through more than one business row, driven from the business
 * side through the key match the task walk uses, each with its count of business rows; whether
 * one is a `duplicate` depends on the tasks sharing its key (keySiblings).
 * In: sides, keys. Out: tasks (id, key, event id, raw status, row count). Reads the business key
 * index and the task (biz type, key) index.
 */
export async function duplicateCandidates(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  keys: readonly unknown[],
): Promise<CandidateRow[]> {
  if (keys.length === 0) return [];
  const match = keyMatch(t.dialect, t.key, { sql: `b.${BK}`, isInt: b.keyIsInt });
  return q.query<CandidateRow>(
    `SELECT ${t.id} AS id, MIN(${t.key.sql}) AS k, ${t.eventId ? `MIN(${t.eventId})` : 'NULL'} AS e, MIN(${t.rawStatus}) AS s, COUNT(*) AS n
       FROM ${businessDerived(b)} b JOIN ${t.table} ON ${t.bizType} = ? AND ${match}
      WHERE b.${BK} IN (${placeholders(keys)}) AND (${t.done.sql}) AND (${t.window.sql})
      GROUP BY ${t.id} HAVING COUNT(*) > 1`,
    [t.bizTypeValue, ...keys, ...t.done.params, ...t.window.params],
  );
}
