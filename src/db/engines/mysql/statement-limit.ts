/**
 * The statement time limit in the syntax of each server that speaks the MySQL protocol, told apart
 * by VERSION(): MariaDB takes it as a statement prefix, MySQL and TiDB (`8.0.11-TiDB-v7.5.0`) as
 * the MAX_EXECUTION_TIME optimizer hint, Vitess (`8.0.30-Vitess`) as vtgate's own comment
 * directive, which bounds the whole query however many shards it reaches.
 */

/** Which server speaks which time-limit syntax. */
export type MysqlFlavour = 'mariadb' | 'mysql' | 'tidb' | 'vitess';

export function flavourOf(version: string): MysqlFlavour {
  if (/-TiDB-/i.test(version)) return 'tidb';
  if (/-Vitess\b/i.test(version)) return 'vitess';
  return /mariadb/i.test(version) ? 'mariadb' : 'mysql';
}

const READ_STATEMENT = /^\s*SELECT\b/i;

/**
 * The statement with its time limit, or the statement itself when it is no plain read (writes are
 * guarded and short; a SHOW or EXPLAIN is not worth limiting) or the limit is off (0).
 */
export function limitStatement(sql: string, flavour: MysqlFlavour, limitMs: number): string {
  if (limitMs <= 0 || !READ_STATEMENT.test(sql)) return sql;
  const ms = Math.trunc(limitMs);
  switch (flavour) {
    case 'mariadb':
      // Seconds, with millisecond precision.
      return `SET STATEMENT max_statement_time=${(limitMs / 1000).toFixed(3)} FOR ${sql.trimStart()}`;
    case 'vitess':
      return sql.replace(READ_STATEMENT, (select) => `${select} /*vt+ QUERY_TIMEOUT_MS=${ms} */`);
    default:
      // MySQL 5.7.8+ and TiDB: milliseconds.
      return sql.replace(READ_STATEMENT, (select) => `${select} /*+ MAX_EXECUTION_TIME(${ms}) */`);
  }
}

/** MariaDB ER_STATEMENT_TIMEOUT, MySQL and TiDB ER_QUERY_TIMEOUT. */
const TIMEOUT_ERRNOS = new Set([1969, 3024]);

/** ER_QUERY_INTERRUPTED: vtgate's answer when its QUERY_TIMEOUT_MS passes (and a KILL QUERY's). */
const INTERRUPTED = 1317;

export function isStatementTimeout(error: unknown): boolean {
  const e = error as { errno?: number; code?: string; message?: string } | undefined;
  return (
    TIMEOUT_ERRNOS.has(Number(e?.errno)) ||
    e?.code === 'ER_STATEMENT_TIMEOUT' ||
    e?.code === 'ER_QUERY_TIMEOUT' ||
    // Only a deadline, not a person's KILL QUERY.
    (Number(e?.errno) === INTERRUPTED && /deadline exceeded/i.test(String(e?.message ?? '')))
  );
}
