import { parseDsn } from './dsn.js';
import { openMysql, type MysqlOptions } from './mysql.js';
import { openSqlite } from './sqlite.js';
import type { Db } from './types.js';

export interface ConnectOptions extends MysqlOptions {
  passwordFile?: string;
  /** SQLite only: create the file if missing. */
  create?: boolean;
}

/** Opens a DSN of either engine. */
export async function connect(dsnText: string, options: ConnectOptions = {}): Promise<Db> {
  const dsn = parseDsn(dsnText, options.passwordFile);
  return dsn.kind === 'sqlite' ? openSqlite(dsn, { create: options.create }) : openMysql(dsn, options);
}
