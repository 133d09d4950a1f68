import { groupErrors, type ErrorGroup } from '../../core/error-groups.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store } from '../../db/port/index.js';
import { filteredListWhere, type ListFilter } from './list-page.js';

/** The distinct errors read for the groups: the most frequent ones; the rest are counted as other. */
export const ERROR_GROUP_READ = 500;

/** A filtered list's total and its tasks grouped by normalised last error. */
export interface ListErrors {
  total: number;
  /** The groups, largest first; undefined when the table has no error column. */
  groups: ErrorGroup[] | undefined;
  /** Tasks in none of the groups shown (their errors were past the most frequent ones read). */
  other: number;
}

/** How many tasks a filtered list holds and what their errors are, grouped; undefined when the table cannot have the list. */
export async function listErrors(source: BoundSource, filter: ListFilter): Promise<ListErrors | undefined> {
  const where = filteredListWhere(source, filter);
  if (!where) return undefined;
  const [total, counts] = await Promise.all([
    store.tasks.countList(source, where),
    store.tasks.countListByError(source, where, ERROR_GROUP_READ),
  ]);
  const groups = counts ? groupErrors(counts) : undefined;
  const grouped = groups?.reduce((s, g) => s + g.count, 0) ?? total;
  return { total, groups, other: Math.max(0, total - grouped) };
}
