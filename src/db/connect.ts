import { parseDsn } from './dsn.js';
import type { MysqlOptions } from './mysql.js';
import type { Db } from './types.js';

export interface ConnectOptions extends MysqlOptions {
  passwordFile?: string;
  /** SQLite only: create the file if missing. */
  create?: boolean;
}

/**
 * Opens a DSN of either engine. Each driver is imported when first needed, so a MySQL run never
 * loads SQLite's native module and the other way round (start-up time).
 */
export async function connect(dsnText: string, options: ConnectOptions = {}): Promise<Db> {
  const dsn = parseDsn(dsnText, options.passwordFile);
  if (dsn.kind === 'sqlite') {
    const { openSqlite } = await import('./sqlite.js');
    return openSqlite(dsn, { create: options.create });
  }
  const { openMysql } = await import('./mysql.js');
  return openMysql(dsn, options);
}
