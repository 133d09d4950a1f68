/**
 * One list of the task table paged by hand (the console's list pages and the selection a bulk
 * action freezes): the list's WHERE with its filters, keyset pages in the backward order of the
 * status index, every id of the list, and tasks by id.
 */

import type { LogicalStatus, Task, TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { and, containsText, type Fragment } from '../../db/fragment.js';
import { store, LIST_STATUS, type ListCursor, type ListKind } from '../../db/port/index.js';
import { listWhere } from '../../ops/task-lists.js';
import { checkListCursor } from './page-cursor.js';

export type { ListCursor, ListKind };

/** Which list, as of when, and the filters on it (the scan filters plus error and payload text). */
export interface ListFilter {
  list: ListKind;
  nowEpoch: number;
  stuckAfterMs: number;
  /** Undefined or empty: every biz type. */
  bizTypes?: string[];
  sinceEpoch?: number;
  untilEpoch?: number;
  /** Text the last error contains ('' or undefined: any). */
  errorText?: string;
  /** Text the payload contains ('' or undefined: any). */
  payloadText?: string;
}

/** One page of a list and where the next one starts (undefined on the last page). */
export interface ListPage {
  tasks: Task[];
  next: ListCursor | undefined;
}

/** The logical status every task of a list is in. */
export function listStatus(list: ListKind): LogicalStatus {
  return LIST_STATUS[list];
}

/** The predicate of a list with its filters (undefined when the table cannot have the list). */
export function filteredListWhere(source: BoundSource, filter: ListFilter): Fragment | undefined {
  const base = listWhere(source, filter.list, {
    nowEpoch: filter.nowEpoch,
    stuckAfterMs: filter.stuckAfterMs,
    limit: 0,
    bizTypes: filter.bizTypes?.length ? filter.bizTypes : undefined,
    sinceEpoch: filter.sinceEpoch,
    untilEpoch: filter.untilEpoch,
  });
  if (!base) return undefined;
  return and([
    base,
    containsText(source.sql.expr('lastError'), filter.errorText, source.sql.dialect.textLike),
    containsText(source.sql.expr('payload'), filter.payloadText, source.sql.dialect.textLike),
  ]);
}

/**
 * Up to `limit` tasks of a list after `cursor`, and the cursor of the next page; undefined (nothing
 * read) when the table cannot have the list. A page is one index range read from where the last one
 * ended, so a late page costs what the first one costs. A cursor from outside (a page link) whose
 * task id or next-retry key this table cannot hold is refused (a usage error) before anything is read.
 */
export async function listPage(
  source: BoundSource,
  filter: ListFilter,
  cursor: ListCursor | undefined,
  limit: number,
): Promise<ListPage | undefined> {
  const after = checkListCursor(source, cursor);
  const where = filteredListWhere(source, filter);
  if (!where) return undefined;
  const { rows, next } = await store.tasks.selectListPage(source, where, after, limit);
  return { tasks: rows.map((r) => source.sql.toTask(r)), next };
}

/**
 * Every id of a list in page order, at most `cap` + 1 of them (more than `cap`: too many to freeze);
 * undefined (nothing read) when the table cannot have the list.
 */
export async function listIds(
  source: BoundSource,
  filter: ListFilter,
  cap: number,
): Promise<TaskId[] | undefined> {
  const where = filteredListWhere(source, filter);
  if (!where) return undefined;
  return store.tasks.selectListIds(source, where, cap);
}

/** Tasks by id as they are now, in the order of `ids` (ids no longer in the table are left out). */
export async function tasksByIds(source: BoundSource, ids: readonly TaskId[]): Promise<Task[]> {
  const order = new Map(ids.map((id, i) => [String(id), i]));
  const tasks = (await store.tasks.selectTasksByIds(source, ids)).map((r) => source.sql.toTask(r));
  return tasks.sort((a, b) => (order.get(String(a.id)) ?? 0) - (order.get(String(b.id)) ?? 0));
}
