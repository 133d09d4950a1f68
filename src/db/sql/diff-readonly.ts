import type { Db, Queryable } from '../types.js';

/**
 * Runs diff's reads read-only, because a rule's `where` is operator-authored SQL and business
 * tables are never written: on MySQL/MariaDB inside `START TRANSACTION READ ONLY` (a stored
 * function with a side effect fails there), on SQLite under `PRAGMA query_only`. The
 * transaction is READ COMMITTED (the pool's level): each chunk sees the latest committed rows
 * and no lock is taken.
 */
const sqliteReaders = new WeakMap<Db, number>();

export async function withReadOnly<T>(db: Db, fn: (q: Queryable) => Promise<T>): Promise<T> {
  if (db.dialect.name === 'mysql') {
    return db.transaction(async (tx) => {
      // The pool's transaction() began a read-write one; replace it (START implicitly commits the empty one).
      await tx.query('START TRANSACTION READ ONLY');
      return fn(tx);
    });
  }
  const readers = sqliteReaders.get(db) ?? 0;
  if (readers === 0) await db.execute('PRAGMA query_only = 1');
  sqliteReaders.set(db, readers + 1);
  try {
    return await fn(db);
  } finally {
    const left = (sqliteReaders.get(db) ?? 1) - 1;
    sqliteReaders.set(db, left);
    if (left === 0) await db.execute('PRAGMA query_only = 0');
  }
}
