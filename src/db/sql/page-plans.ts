import type { BoundSource } from '../bind-source.js';
import { and, type Fragment } from '../fragment.js';
import type { ListReadOptions } from './list-read.js';

/** How a list is cut into keyset pages: the key of each order, and the WHERE of a page between two keys. */

/**
 * Where a page of a list starts: after the last row of the previous page, by its id and its exact
 * next-retry time (TaskSql.pageKey(): every fraction of a second, unlike the epoch a list prints).
 * With no id, a cut by next-retry time alone (page-cuts.ts): a page up to it holds every row at that
 * time, the page after it none.
 */
export interface PageKey {
  id: unknown;
  nextRetry: unknown;
}

/**
 * One run of pages over a list: a WHERE for the page after `after` (up to `upTo`, inclusive, when
 * given), the index order, and the expressions of its key (id, and the exact next-retry time when
 * the order has one).
 */
export interface PagePlan {
  where(after: PageKey | undefined, upTo?: PageKey): Fragment;
  order: string;
  /** The order backwards (the last row first). */
  descending: string;
  key: { id: string; nextRetry?: string };
}

/**
 * How a list is read: in index order (next_retry_time, id), with rows lacking a next-retry time
 * first (by id) unless `nullNextRetry` is false. Tables without a next-retry column, and `order: id`, go by id.
 */
export function pagePlans(source: BoundSource, base: Fragment, options: ListReadOptions): PagePlan[] {
  const { sql } = source;
  const id = sql.expr('id') as string;
  const nrt = sql.expr('nextRetryAt');
  const none: Fragment = { sql: '1=1', params: [] };
  const byId = (after: PageKey | undefined, upTo: PageKey | undefined): Fragment[] => [
    after ? { sql: `${id} > ?`, params: [after.id] } : none,
    upTo ? { sql: `${id} <= ?`, params: [upTo.id] } : none,
  ];
  if (!nrt || options.order === 'id')
    return [
      {
        where: (after, upTo) => and([base, ...byId(after, upTo)]),
        order: id,
        descending: `${id} DESC`,
        key: { id },
      },
    ];
  const plans: PagePlan[] = [];
  if (options.nullNextRetry !== false) {
    plans.push({
      where: (after, upTo) => and([base, { sql: `${nrt} IS NULL`, params: [] }, ...byId(after, upTo)]),
      order: id,
      descending: `${id} DESC`,
      key: { id },
    });
  }
  // The key is the column's exact value, bound back in the column's type: a page starts strictly
  // after the last row in (next_retry_time, id) order, whatever fraction of a second it holds,
  // and the column stays bare for the (status, next_retry_time, id) index.
  const param = sql.pageKeyParam('nextRetryAt');
  plans.push({
    where: (after, upTo) =>
      and([
        base,
        { sql: `${nrt} IS NOT NULL`, params: [] },
        !after
          ? none
          : after.id === undefined
            ? { sql: `${nrt} > ${param}`, params: [after.nextRetry] }
            : {
                sql: `${nrt} > ${param} OR (${nrt} = ${param} AND ${id} > ?)`,
                params: [after.nextRetry, after.nextRetry, after.id],
              },
        !upTo
          ? none
          : upTo.id === undefined
            ? { sql: `${nrt} <= ${param}`, params: [upTo.nextRetry] }
            : {
                sql: `${nrt} < ${param} OR (${nrt} = ${param} AND ${id} <= ?)`,
                params: [upTo.nextRetry, upTo.nextRetry, upTo.id],
              },
      ]),
    order: `${nrt}, ${id}`,
    descending: `${nrt} DESC, ${id} DESC`,
    key: { id, nextRetry: sql.pageKey('nextRetryAt') as string },
  });
  return plans;
}

/**
 * The statement reading the key of one row of `plan` after `after`: the row `offset` rows on, in
 * `order` (the plan's own unless given: `plan.descending` for its last row).
 */
export function keyStatement(
  from: string,
  plan: PagePlan,
  after: PageKey | undefined,
  offset: number,
  order = plan.order,
): Fragment {
  const w = plan.where(after);
  return {
    sql: `SELECT ${plan.key.id} AS id, ${plan.key.nextRetry ?? 'NULL'} AS k FROM ${from} WHERE ${w.sql} ORDER BY ${order} LIMIT 1${offset > 0 ? ` OFFSET ${offset}` : ''}`,
    params: w.params,
  };
}

/** The key keyStatement() reads, or undefined when there is no such row. */
export async function readKey(source: BoundSource, statement: Fragment): Promise<PageKey | undefined> {
  const rows = await source.db.query<{ id: unknown; k: unknown }>(statement.sql, statement.params);
  const row = rows[0];
  return row && { id: row.id, nextRetry: row.k };
}

/** A key read as text from the wire, bound as a number when it is one (so an integer column compares as an integer). */
export function numericKey(text: string | null): string | number | null {
  if (text === null) return null;
  const n = Number(text);
  return /^-?\d+(\.\d+)?$/.test(text) && (Number.isSafeInteger(n) || !Number.isInteger(n)) ? n : text;
}
