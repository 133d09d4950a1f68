import type { Db, Queryable } from '../types.js';

/**
 * Runs diff's reads read-only, because a rule's `where` is operator-authored SQL and business
 * tables are never written: each engine has its own way (a read-only transaction on
 * MySQL/MariaDB, `PRAGMA query_only` on SQLite).
 */
export async function withReadOnly<T>(db: Db, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db.engine.withReadOnly(db, fn);
}
