import { readFileSync } from 'node:fs';
import { usageError } from '../errors.js';

export type DsnKind = 'mysql' | 'sqlite';

export interface MysqlDsn {
  kind: 'mysql';
  user: string;
  password: string | undefined;
  host: string;
  port: number;
  database: string;
  params: URLSearchParams;
}

export interface SqliteDsn {
  kind: 'sqlite';
  file: string;
}

export type Dsn = MysqlDsn | SqliteDsn;

const DSN_HINT =
  'Give a DSN as mysql://user:pass@host:3306/db or sqlite:PATH, with --db, TASKRECON_DB or `db:` in taskrecon.config.yaml.';

/** Parses a DSN; `passwordFile` (from --password-file) replaces any password in it. */
export function parseDsn(text: string, passwordFile?: string): Dsn {
  if (text.startsWith('sqlite:')) {
    const file = text.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!file) throw usageError(`the DSN 'sqlite:' names no file`, DSN_HINT);
    return { kind: 'sqlite', file };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`'${maskDsnText(text)}' is not a DSN`, DSN_HINT);
  }
  if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:') {
    throw usageError(`unsupported DSN scheme '${url.protocol.replace(/:$/, '')}'`, DSN_HINT);
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!database) throw usageError(`the DSN ${maskDsnText(text)} names no database`, DSN_HINT);
  let password = url.password ? decodeURIComponent(url.password) : undefined;
  if (passwordFile) {
    try {
      password = readFileSync(passwordFile, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      throw usageError(
        `cannot read --password-file ${passwordFile}: ${(error as NodeJS.ErrnoException).code ?? error}`,
      );
    }
  }
  return {
    kind: 'mysql',
    user: decodeURIComponent(url.username || 'root'),
    password,
    host: url.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: url.port ? Number(url.port) : 3306,
    database,
    params: url.searchParams,
  };
}

/** The DSN as it may be shown anywhere: `user:***@host:port/db`. */
export function displayDsn(dsn: Dsn): string {
  if (dsn.kind === 'sqlite') return `sqlite:${dsn.file}`;
  return `mysql://${dsn.user}${dsn.password ? ':***' : ''}@${dsn.host}:${dsn.port}/${dsn.database}`;
}

/** Masks the password of any mysql-like URL inside free text (error messages included). */
export function maskDsnText(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@\s]*@/gi, '$1:***@');
}
