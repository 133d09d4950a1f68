import { mysqlEngine } from './mysql/index.js';
import { postgresEngine } from './postgres/index.js';
import { sqliteEngine } from './sqlite/index.js';
import type { Engine, EngineName } from './types.js';

/**
 * The one place an engine name becomes an engine (shaped after db-scheduler's JdbcCustomization
 * per database). The switch is exhaustive: a name added to EngineName without a case here does
 * not compile. Engines are light objects; each loads its driver only when it opens a connection.
 */
export function engineFor(name: EngineName): Engine {
  switch (name) {
    case 'mysql':
      return mysqlEngine;
    case 'sqlite':
      return sqliteEngine;
    case 'postgres':
      return postgresEngine;
    default: {
      const unknown: never = name;
      throw new Error(`no engine named ${String(unknown)}`);
    }
  }
}

/** Every engine name, in the order help texts list them (a Record: a missing name does not compile). */
const NAMED: Record<EngineName, true> = { mysql: true, sqlite: true, postgres: true };
export const ENGINE_NAMES = Object.keys(NAMED) as EngineName[];

/** The engine that a DSN scheme (`mysql`, `mariadb`, `sqlite`, `postgres`, `postgresql`) names, or undefined. */
export function engineOfScheme(scheme: string): EngineName | undefined {
  switch (scheme) {
    case 'mysql':
    case 'mariadb':
      return 'mysql';
    case 'sqlite':
      return 'sqlite';
    case 'postgres':
    case 'postgresql':
      return 'postgres';
    default:
      return undefined;
  }
}

/** How a DSN of each scheme `engineOfScheme` knows begins, for "did you mean" on a mistyped scheme. */
export const DSN_SCHEME_FORMS: Readonly<Record<string, string>> = {
  mysql: 'mysql://',
  mariadb: 'mariadb://',
  postgres: 'postgres://',
  postgresql: 'postgresql://',
  sqlite: 'sqlite:PATH',
};

/** The engines and their schemes, as an error about an unknown scheme names them. */
export const SUPPORTED_ENGINES =
  'MySQL/MariaDB (mysql://, mariadb://), PostgreSQL (postgres://, postgresql://) and SQLite (sqlite:PATH)';
