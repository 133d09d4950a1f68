import { parseDsn } from './dsn.js';
import { engineFor } from './engines/registry.js';
import type { ConnectOptions } from './engines/types.js';
import type { Db } from './types.js';

/**
 * The one way to open a DSN, whichever the engine: the DSN names the engine, and the engine
 * opens it. Each driver is imported when first needed, so a MySQL run never loads SQLite's
 * native module and the other way round (start-up time).
 */
export async function connect(dsnText: string, options: ConnectOptions = {}): Promise<Db> {
  const dsn = parseDsn(dsnText, options.passwordFile);
  return engineFor(dsn.kind).open(dsn, options);
}
