/**
 * The statement time limit in MySQL/MariaDB's syntax: MariaDB takes it as a statement prefix,
 * MySQL as an optimizer hint.
 */

/** Which server speaks which time-limit syntax. */
export type MysqlFlavour = 'mariadb' | 'mysql';

export function flavourOf(version: string): MysqlFlavour {
  return /mariadb/i.test(version) ? 'mariadb' : 'mysql';
}

const READ_STATEMENT = /^\s*SELECT\b/i;

/**
 * The statement with its time limit, or the statement itself when it is no plain read (writes are
 * guarded and short; a SHOW or EXPLAIN is not worth limiting) or the limit is off (0).
 */
export function limitStatement(sql: string, flavour: MysqlFlavour, limitMs: number): string {
  if (limitMs <= 0 || !READ_STATEMENT.test(sql)) return sql;
  if (flavour === 'mariadb') {
    // Seconds, with millisecond precision.
    return `SET STATEMENT max_statement_time=${(limitMs / 1000).toFixed(3)} FOR ${sql.trimStart()}`;
  }
  return sql.replace(
    READ_STATEMENT,
    (select) => `${select} /*+ MAX_EXECUTION_TIME(${Math.trunc(limitMs)}) */`,
  );
}

/** MariaDB ER_STATEMENT_TIMEOUT, MySQL ER_QUERY_TIMEOUT. */
const TIMEOUT_ERRNOS = new Set([1969, 3024]);

export function isStatementTimeout(error: unknown): boolean {
  const e = error as { errno?: number; code?: string } | undefined;
  return (
    TIMEOUT_ERRNOS.has(Number(e?.errno)) ||
    e?.code === 'ER_STATEMENT_TIMEOUT' ||
    e?.code === 'ER_QUERY_TIMEOUT'
  );
}
