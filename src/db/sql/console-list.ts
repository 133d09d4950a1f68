import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import { and, type Fragment } from '../fragment.js';
import { placeholders } from '../task-sql.js';

/**
 * The console's lists: keyset pages (never OFFSET) in the backward order of the status index
 * (status, next_retry_time, id): rows with a next-retry time newest first, then the rows without one
 * by id, newest first. A page is one index range read from where the last one ended, so page 1,000
 * costs what page 1 costs. Tables without a next-retry column are read by id, newest first.
 */

/** Where a page starts: after this row. `nrt` null: in the rows without a next-retry time. */
export interface ListCursor {
  nrt: number | null;
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
  const param = source.db.dialect.epochParam(sql.timeTypes.nextRetryAt ?? 'datetime');
  const setPhase: Plan = {
    where: and([
      { sql: `${nrt} IS NOT NULL`, params: [] },
      cursor
        ? {
            sql: `${nrt} < ${param} OR (${nrt} = ${param} AND ${id} < ?)`,
            params: [cursor.nrt, cursor.nrt, cursor.id],
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
 * TaskSql.taskSelect() order. Reads only: at most two index range reads of limit + 1 rows.
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
      `SELECT ${sql.taskSelect()} FROM ${sql.table} WHERE ${w.sql} ORDER BY ${plan.order} LIMIT ${want - rows.length}`,
      w.params,
      { rowsAsArray: true },
    ))
      rows.push(row as unknown[]);
    if (rows.length >= want) break;
  }
  if (rows.length < want) return { rows, next: undefined };
  rows.length = Math.trunc(limit);
  const last = rows[rows.length - 1] as unknown[];
  const nrt = last[6] === null || last[6] === undefined ? null : Number(last[6]);
  return { rows, next: { nrt: sql.has('nextRetryAt') ? nrt : null, id: last[0] as TaskId } };
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
  const nrtEpoch = sql.epoch('nextRetryAt') ?? 'NULL';
  const ids: TaskId[] = [];
  let cursor: ListCursor | undefined;
  for (;;) {
    let last: { id: TaskId; nrt: unknown } | undefined;
    let got = 0;
    for (const plan of plans(source, cursor)) {
      const w = and([base, plan.where]);
      const rows = await source.db.query<{ id: TaskId; nrt: unknown }>(
        `SELECT ${id} AS id, ${nrtEpoch} AS nrt FROM ${sql.table} WHERE ${w.sql} ORDER BY ${plan.order} LIMIT ${pageSize - got}`,
        w.params,
      );
      for (const r of rows) ids.push(r.id);
      got += rows.length;
      last = rows[rows.length - 1] ?? last;
      if (got >= pageSize) break;
    }
    if (got < pageSize || ids.length > cap || !last) return ids;
    cursor = { id: last.id, nrt: last.nrt === null || !sql.has('nextRetryAt') ? null : Number(last.nrt) };
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
