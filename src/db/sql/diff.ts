import type { ExpectMode } from '../../core/diff.js';
import type { Dialect } from '../dialect.js';
import type { Fragment } from '../task-sql.js';
import type { Queryable } from '../types.js';
import { keyMatch, type KeyExpr } from './diff-keys.js';

/**
 * The statements of a same-server diff: both tables on one connection, so the database joins
 * them. The task table is walked by primary-key ranges (one LEFT JOIN with grouped counts per
 * chunk, never NOT EXISTS: MariaDB plans the LEFT JOIN … IS NULL form as an index anti-join);
 * the business table is walked in key order for orphans. Every statement reads only.
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

const BK = 'taskrecon_bk';

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

/** A task of one chunk whose business row count could make it a finding. */
export interface SuspectRow {
  id: unknown;
  k: unknown;
  e: unknown;
  s: unknown;
  r: unknown;
  n: unknown;
}

/**
 * One chunk of the task walk: the rule's tasks with ids in [lo, hi] (all of them when lo/hi are
 * undefined), LEFT JOINed to the business key, grouped per task with the count of its business
 * rows, keeping only the suspects: done with no row or with several, open (failed/pending) with
 * any. In: sides, id range, expect mode. Out: suspect rows (id, key, event id, raw status, role,
 * row count). Reads only: a primary-key range and the business key index.
 */
export async function chunkSuspects(
  q: Queryable,
  t: TaskSide,
  b: BusinessSide,
  range: { lo: number; hi: number } | undefined,
  expect: ExpectMode,
): Promise<SuspectRow[]> {
  const n = `COUNT(b.${BK})`;
  const role = `MIN(${t.role.sql})`;
  const doneWhen = [
    expect !== 'at-most-one' ? `${n} = 0` : undefined,
    expect !== 'at-least-one' ? `${n} > 1` : undefined,
  ].filter(Boolean);
  const having = [
    `(${role} = ${ROLE_DONE} AND (${doneWhen.join(' OR ')}))`,
    `(${role} = ${ROLE_OPEN} AND ${n} > 0)`,
  ].join(' OR ');
  const match = keyMatch(t.dialect, { sql: `b.${BK}`, isInt: b.keyIsInt }, t.key);
  const rangeSql = range ? ` AND ${t.id} >= ? AND ${t.id} <= ?` : '';
  const sql =
    `SELECT ${t.id} AS id, MIN(${t.key.sql}) AS k, ${t.eventId ? `MIN(${t.eventId})` : 'NULL'} AS e, MIN(${t.rawStatus}) AS s, ${role} AS r, ${n} AS n` +
    ` FROM ${t.table} LEFT JOIN ${businessDerived(b)} b ON ${match}` +
    ` WHERE ${t.bizType} = ?${rangeSql} AND (${t.window.sql})` +
    ` GROUP BY ${t.id} HAVING ${having}`;
  const params = [
    ...t.role.params,
    t.bizTypeValue,
    ...(range ? [range.lo, range.hi] : []),
    ...t.window.params,
    ...t.role.params,
    ...t.role.params,
  ];
  return q.query<SuspectRow>(sql, params);
}

/**
 * How many of the rule's tasks a chunk holds (tasksChecked).
 * In: task side, id range. Out: a count. Reads the primary-key range the chunk just read.
 */
export async function countChunkTasks(
  q: Queryable,
  t: TaskSide,
  range: { lo: number; hi: number } | undefined,
): Promise<number> {
  const rangeSql = range ? ` AND ${t.id} >= ? AND ${t.id} <= ?` : '';
  const rows = await q.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM ${t.table} WHERE ${t.bizType} = ?${rangeSql} AND (${t.window.sql})`,
    [t.bizTypeValue, ...(range ? [range.lo, range.hi] : []), ...t.window.params],
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
  t: TaskSide,
  keys: readonly unknown[],
): Promise<SiblingRow[]> {
  if (keys.length === 0) return [];
  return q.query<SiblingRow>(
    `SELECT MIN(${t.key.sql}) AS k, COUNT(*) AS tasks, SUM(CASE WHEN (${t.role.sql}) = ${ROLE_DONE} THEN 1 ELSE 0 END) AS done
       FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key.sql} IN (${keys.map(() => '?').join(', ')}) GROUP BY ${t.key.sql}`,
    [...t.role.params, t.bizTypeValue, ...keys],
  );
}

/**
 * The upper bound of the next orphan chunk: the key `offset` rows after `after` in key order
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
  const match = keyMatch(t.dialect, t.key, { sql: `b.${BK}`, isInt: b.keyIsInt });
  const bounds = [
    after === undefined ? `b.${BK} IS NOT NULL` : `b.${BK} > ?`,
    ...(upTo === undefined ? [] : [`b.${BK} <= ?`]),
  ];
  const params = [
    t.bizTypeValue,
    ...(after === undefined ? [] : [after]),
    ...(upTo === undefined ? [] : [upTo]),
  ];
  return q.query<OrphanRow>(
    `SELECT b.${BK} AS k, COUNT(*) AS n FROM ${businessDerived(b)} b LEFT JOIN ${t.table} ON ${t.bizType} = ? AND ${match}
      WHERE ${bounds.join(' AND ')} AND ${t.id} IS NULL GROUP BY b.${BK}`,
    params,
  );
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
