import { parseDsn } from './dsn.js';
import { engineFor } from './engines/registry.js';
import type { ConnectOptions } from './engines/types.js';
import type { Db } from './types.js';

/** What each connection was opened with that applies to every database of the same run. */
const runOptions = new WeakMap<Db, ConnectOptions>();

/**
 * The one way to open a DSN, whichever the engine: the DSN names the engine, and the engine
 * opens it. Each driver is imported when first needed, so a MySQL run never loads SQLite's
 * native module and the other way round (start-up time).
 */
export async function connect(dsnText: string, options: ConnectOptions = {}): Promise<Db> {
  const dsn = parseDsn(dsnText, options.passwordFile);
  const db = await engineFor(dsn.kind).open(dsn, options);
  runOptions.set(db, {
    appTimeZone: options.appTimeZone,
    connectTimeoutMs: options.connectTimeoutMs,
    maxStatementTimeMs: options.maxStatementTimeMs,
  });
  return db;
}

/**
 * Opens another database beside `db` (a queue table that lives elsewhere) with what `db` was
 * opened with: the app's time zone, the connect timeout and the statement time limit.
 */
export async function connectBeside(db: Db, dsnText: string): Promise<Db> {
  return connect(dsnText, runOptions.get(db) ?? {});
}
