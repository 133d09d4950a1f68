import type { BoundSource } from '../bind-source.js';
import type { Fragment } from '../fragment.js';
import type { AheadOptions } from './ahead-limits.js';

/** How a list is read: its order, and through which index. */

/**
 * How a list is read. `order`: `next-retry` (the default) is the list order, (next_retry_time, id)
 * through the status index; `id` is primary-key order. `tableHint` follows the table name (the
 * engine's primaryKeyWalk(): read through the primary key).
 */
export interface ListReadOptions {
  nullNextRetry?: boolean;
  order?: 'next-retry' | 'id';
  tableHint?: string;
  /**
   * How a whole encoded list is read pages ahead (list-ahead.ts): false never; by default where
   * the engine gains by it (`Engine.listReadAhead`); options read ahead on any engine.
   */
  readAhead?: false | AheadOptions;
}

/**
 * The table hint that reads the list `where` selects through the primary key, when the engine
 * finds that walk cheaper than the list's own index (a large share of the table); undefined otherwise.
 * In: the list's WHERE. Reads the plan only (EXPLAIN, the table's row estimate).
 */
export async function primaryKeyWalk(source: BoundSource, where: Fragment): Promise<string | undefined> {
  const { db, sql, profile } = source;
  return db.engine.primaryKeyWalk(db, sql.table, profile.table, where);
}
