import { readFileSync } from 'node:fs';
import { usageError } from '../errors.js';
import { engineFor, engineOfScheme } from './engines/registry.js';
import type { EngineName } from './engines/types.js';

/** A DSN of a server engine: `<scheme>://user:pass@host:port/db?params`. */
export interface ServerDsn {
  kind: EngineName;
  user: string;
  password: string | undefined;
  host: string;
  port: number;
  database: string;
  params: URLSearchParams;
}

/** A DSN of an embedded engine: `<scheme>:PATH`. */
export interface FileDsn {
  kind: EngineName;
  file: string;
}

/** The MySQL/MariaDB DSN is a server DSN. */
export type MysqlDsn = ServerDsn;
/** The SQLite DSN is a file DSN. */
export type SqliteDsn = FileDsn;

export type Dsn = ServerDsn | FileDsn;

const DSN_HINT =
  'Give a DSN as mysql://user:pass@host:3306/db or sqlite:PATH, with --db, TASKRECON_DB or `db:` in taskrecon.config.yaml.';

/** Parses a DSN; `passwordFile` (from --password-file) replaces any password in it. */
export function parseDsn(text: string, passwordFile?: string): Dsn {
  // An embedded engine's DSN is its scheme and a path (no URL: a relative path is allowed).
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(text)?.[1];
  const fileEngine = scheme === undefined ? undefined : engineOfScheme(scheme);
  if (scheme !== undefined && fileEngine !== undefined && engineFor(fileEngine).embedded) {
    const file = text.slice(scheme.length + 1).replace(/^\/\/(?=\/)/, '');
    if (!file) throw usageError(`the DSN '${scheme}:' names no file`, DSN_HINT);
    return { kind: fileEngine, file };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`'${maskDsnText(text)}' is not a DSN`, DSN_HINT);
  }
  const urlScheme = url.protocol.replace(/:$/, '');
  const engine = engineOfScheme(urlScheme);
  if (engine === undefined || engineFor(engine).embedded) {
    throw usageError(`unsupported DSN scheme '${urlScheme}'`, DSN_HINT);
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
    kind: engine,
    user: decodeURIComponent(url.username || 'root'),
    password,
    host: url.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: url.port ? Number(url.port) : (engineFor(engine).defaultPort ?? 0),
    database,
    params: url.searchParams,
  };
}

/** The DSN as it may be shown anywhere: `user:***@host:port/db`. */
export function displayDsn(dsn: Dsn): string {
  if ('file' in dsn) return `${dsn.kind}:${dsn.file}`;
  return `${dsn.kind}://${dsn.user}${dsn.password ? ':***' : ''}@${dsn.host}:${dsn.port}/${dsn.database}`;
}

/** Masks the password of any mysql-like URL inside free text (error messages included). */
export function maskDsnText(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@\s]*@/gi, '$1:***@');
}
