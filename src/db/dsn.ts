import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { usageError } from '../errors.js';
import { closest } from '../config/suggest.js';
import { DSN_SCHEME_FORMS, engineFor, engineOfScheme, SUPPORTED_ENGINES } from './engines/registry.js';
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
/** The PostgreSQL DSN is a server DSN (`sslmode` stays in its params). */
export type PostgresDsn = ServerDsn;
/** The SQLite DSN is a file DSN. */
export type SqliteDsn = FileDsn;

export type Dsn = ServerDsn | FileDsn;

const DSN_HINT =
  'Give a DSN as mysql://user:pass@host:3306/db, postgres://user:pass@host:5432/db or sqlite:PATH, with --db, TASKRECON_DB or `db:` in taskrecon.config.yaml.';

/**
 * The scheme and engine of an embedded engine's DSN (`<scheme>:PATH`, no URL: a relative path is
 * allowed), or undefined for any other text.
 */
function fileSchemeOf(text: string): { scheme: string; engine: EngineName } | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(text)?.[1];
  const engine = scheme === undefined ? undefined : engineOfScheme(scheme);
  if (scheme === undefined || engine === undefined || !engineFor(engine).embedded) return undefined;
  return { scheme, engine };
}

/** An unknown scheme: the engines taskrecon reads, and the scheme meant when one is close (`mysq` → mysql://). */
function unknownScheme(scheme: string) {
  const guess = closest(scheme, Object.keys(DSN_SCHEME_FORMS));
  const meant = guess ? `Did you mean ${DSN_SCHEME_FORMS[guess]}? ` : '';
  return usageError(
    `unsupported DSN scheme '${scheme}': taskrecon reads ${SUPPORTED_ENGINES}`,
    `${meant}${DSN_HINT}`,
  );
}

/** Parses a DSN; `passwordFile` (from --password-file) replaces any password in it. */
export function parseDsn(text: string, passwordFile?: string): Dsn {
  const fileDsn = fileSchemeOf(text);
  if (fileDsn) {
    const file = text.slice(fileDsn.scheme.length + 1).replace(/^\/\/(?=\/)/, '');
    if (!file) throw usageError(`the DSN '${fileDsn.scheme}:' names no file`, DSN_HINT);
    return { kind: fileDsn.engine, file };
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
    throw unknownScheme(urlScheme);
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

/**
 * An embedded engine's DSN with a relative path resolved against `dir` (the folder of the config
 * file that names it); an absolute path, `:memory:` or a server DSN as it is.
 */
export function resolveFileDsn(text: string, dir: string): string {
  const fileDsn = fileSchemeOf(text);
  if (!fileDsn) return text;
  const file = text.slice(fileDsn.scheme.length + 1);
  if (isAbsolute(file) || file === ':memory:') return text;
  return `${fileDsn.scheme}:${resolve(dir, file)}`;
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
