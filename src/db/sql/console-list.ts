import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import { and, type Fragment } from '../fragment.js';
import { LIST_PAGE_KEY, placeholders } from '../task-sql.js';

/**
 * The console's lists: keyset pages (never OFFSET) in the backward order of the status index
 * (status, next_retry_time, id): rows with a next-retry time newest first, then the rows without one
 * by id, newest first. A page is one index range read from where the last one ended, so page 1,000
 * costs what page 1 costs. Tables without a next-retry column are read by id, newest first.
 * A page continues before the last row's exact next-retry time (TaskSql.pageKey(): every fraction
 * of a second), bound back in the column's type, so the rows of a second shared across pages are
 * each read once.
 */

/**
 * Where a page starts: after this row. `nrt` is its exact next-retry page key (as pageKeyOf gave
 * it: epoch number or decimal text, or time text; see TaskSql.pageKeyForm()); null: in the rows
 * without a next-retry time.
 */
export interface ListCursor {
  nrt: number | string | null;
  id: TaskId;
}

interface Plan {
  where: Fragment;
  order: string;
}

/** The statement parts that continue after `cursor` (phase 1: next-retry set; phase 2: next-retry NULL). */
function plans(source: BoundSource, cursor: ListCursor | undefined): Plan[] {
  const { sql } = source;
  const id = sql.expr('id') as string;
  const nrt = sql.expr('nextRetryAt');
  const after = (at: TaskId | undefined): Fragment =>
    at === undefined ? { sql: '1=1', params: [] } : { sql: `${id} < ?`, params: [at] };
  if (!nrt) return [{ where: after(cursor?.id), order: `${id} DESC` }];
  const nullPhase: Plan = {
    where: and([{ sql: `${nrt} IS NULL`, params: [] }, after(cursor?.nrt === null ? cursor.id : undefined)]),
    order: `${id} DESC`,
  };
  if (cursor && cursor.nrt === null) return [nullPhase];
  const param = sql.pageKeyParam('nextRetryAt');
  const setPhase: Plan = {
    where: and([
      { sql: `${nrt} IS NOT NULL`, params: [] },
      // The bare `<=` bounds the index range (read backward from the key); the OR alone leaves
      // PostgreSQL a BitmapOr of two ranges and a sort of every row before the key.
      cursor
        ? {
            sql: `${nrt} <= ${param} AND (${nrt} < ${param} OR (${nrt} = ${param} AND ${id} < ?))`,
            params: [cursor.nrt, cursor.nrt, cursor.nrt, cursor.id],
          }
        : { sql: '1=1', params: [] },
    ]),
    order: `${nrt} DESC, ${id} DESC`,
  };
  return [setPhase, nullPhase];
}

/**
 * One page of a list: up to `limit` rows after `cursor`, and the cursor of the next page (undefined
 * when this page is the last). In: the list predicate, cursor, limit. Out: rows as arrays in
 * TaskSql.listSelect() order (taskSelect()'s, then the page key). Reads only: at most two index range reads of limit + 1 rows.
 */
export async function selectListPage(
  source: BoundSource,
  base: Fragment,
  cursor: ListCursor | undefined,
  limit: number,
): Promise<{ rows: unknown[][]; next: ListCursor | undefined }> {
  const { sql } = source;
  const rows: unknown[][] = [];
  const want = Math.trunc(limit) + 1;
  for (const plan of plans(source, cursor)) {
    const w = and([base, plan.where]);
    for await (const row of source.db.stream(
      `SELECT ${sql.listSelect()} FROM ${sql.table} WHERE ${w.sql} ORDER BY ${plan.order} LIMIT ${want - rows.length}`,
      w.params,
      { rowsAsArray: true },
    ))
      rows.push(row as unknown[]);
    if (rows.length >= want) break;
  }
  if (rows.length < want) return { rows, next: undefined };
  rows.length = Math.trunc(limit);
  const last = rows[rows.length - 1] as unknown[];
  return { rows, next: { nrt: cursorKey(source, last[LIST_PAGE_KEY]), id: last[0] as TaskId } };
}

/** A row's page key as a cursor carries it: null without a next-retry time, else number or text. */
function cursorKey(source: BoundSource, key: unknown): number | string | null {
  if (!source.sql.has('nextRetryAt') || key === null || key === undefined) return null;
  if (typeof key === 'number' || typeof key === 'string') return key;
  return String(key);
}

/**
 * Every id of a list, in page order, at most `cap` + 1 of them (a preview that freezes a selection).
 * In: the list predicate, cap, page size. Out: ids. Reads only, a keyset page at a time.
 */
export async function selectListIds(
  source: BoundSource,
  base: Fragment,
  cap: number,
  pageSize = 5000,
): Promise<TaskId[]> {
  const { sql } = source;
  const id = sql.expr('id') as string;
  const nrtKey = sql.pageKey('nextRetryAt') ?? 'NULL';
  const ids: TaskId[] = [];
  let cursor: ListCursor | undefined;
  for (;;) {
    let last: { id: TaskId; nrt: unknown } | undefined;
    let got = 0;
    for (const plan of plans(source, cursor)) {
      const w = and([base, plan.where]);
      const rows = await source.db.query<{ id: TaskId; nrt: unknown }>(
        `SELECT ${id} AS id, ${nrtKey} AS nrt FROM ${sql.table} WHERE ${w.sql} ORDER BY ${plan.order} LIMIT ${pageSize - got}`,
        w.params,
      );
      for (const r of rows) ids.push(r.id);
      got += rows.length;
      last = rows[rows.length - 1] ?? last;
      if (got >= pageSize) break;
    }
    if (got < pageSize || ids.length > cap || !last) return ids;
    cursor = { id: last.id, nrt: cursorKey(source, last.nrt) };
  }
}

/**
 * Tasks by id (a preview's first frozen tasks, as they are now).
 * In: ids (a few). Out: rows as arrays in TaskSql.taskSelect() order, by id. Reads only.
 */
export async function selectTasksByIds(source: BoundSource, ids: readonly TaskId[]): Promise<unknown[][]> {
  if (ids.length === 0) return [];
  const { sql } = source;
  const id = sql.expr('id') as string;
  const rows: unknown[][] = [];
  for await (const row of source.db.stream(
    `SELECT ${sql.taskSelect()} FROM ${sql.table} WHERE ${id} IN (${placeholders(ids)}) ORDER BY ${id}`,
    [...ids],
    { rowsAsArray: true },
  ))
    rows.push(row as unknown[]);
  return rows;
}
