import { placeholders, type Fragment } from '../fragment.js';
import type { Queryable } from '../types.js';
import { BK, businessDerived, type BusinessSide } from './diff.js';

/**
 * The lookups behind a task's effect state before a retry: for one diff rule and a batch of task
 * keys, the business rows per key and the rule's tasks per key (any status, and the done ones),
 * the facts diff classifies with. One statement per rule and batch, never one per task. Both
 * read only.
 */

/** Business rows of one key. */
export interface KeyRowCount {
  k: unknown;
  n: unknown;
}

/**
 * The business rows matching each of `keys`, the rule's `where` applied.
 * In: the business side, keys (text). Out: one row per key found (key as stored, count). Reads the
 * business key index.
 */
export async function businessRowCounts(
  q: Queryable,
  b: BusinessSide,
  keys: readonly string[],
): Promise<KeyRowCount[]> {
  if (keys.length === 0) return [];
  return q.query<KeyRowCount>(
    `SELECT b.${BK} AS k, COUNT(*) AS n FROM ${businessDerived(b)} b WHERE b.${BK} IN (${placeholders(keys)}) GROUP BY b.${BK}`,
    [...keys],
  );
}

/** The task side of an effect lookup: quoted expressions of the bound source. */
export interface EffectTaskSide {
  table: string;
  bizType: string;
  bizTypeValue: string;
  key: string;
  /** Predicate: the task's status is one of the rule's done statuses. */
  done: Fragment;
}

/** The rule's tasks sharing one key. */
export interface KeyTaskCount {
  k: unknown;
  tasks: unknown;
  done: unknown;
}

/**
 * The rule's tasks with each of `keys`: how many, and how many of them are done.
 * In: the task side, keys. Out: one row per key found. Reads the (biz type, key) index.
 */
export async function taskKeyCounts(
  q: Queryable,
  t: EffectTaskSide,
  keys: readonly string[],
): Promise<KeyTaskCount[]> {
  if (keys.length === 0) return [];
  return q.query<KeyTaskCount>(
    `SELECT ${t.key} AS k, COUNT(*) AS tasks, SUM(CASE WHEN ${t.done.sql} THEN 1 ELSE 0 END) AS done
       FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key} IN (${placeholders(keys)}) GROUP BY ${t.key}`,
    [...t.done.params, t.bizTypeValue, ...keys],
  );
}
