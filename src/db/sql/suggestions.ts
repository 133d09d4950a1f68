import type { Dialect } from '../dialect.js';

/**
 * The statements doctor and diff suggest to a DBA. They are printed, never run: identifiers are
 * quoted by the dialect, and a suggestion the dialect cannot express comes back as null.
 */

/** `CREATE INDEX name ON table (columns)`, with `;` when `terminated`. */
export function createIndexStatement(
  dialect: Dialect,
  name: string,
  table: string,
  columns: readonly string[],
  terminated = false,
): string {
  const q = dialect.quoteId;
  return `CREATE INDEX ${q(recommendedIndexName(dialect, name, table))} ON ${q(table)} (${columns.map((c) => q(c)).join(', ')})${terminated ? ';' : ''}`;
}

/**
 * The name a recommended index gets: as given where index names are per table, else `idx_<table>_…`
 * (the table without its schema; PostgreSQL's 63-byte identifier limit kept).
 */
export function recommendedIndexName(dialect: Dialect, name: string, table: string): string {
  if (dialect.indexNamesPerTable) return name;
  const bare = table.replace(/^.*\./, '');
  if (name.startsWith(`idx_${bare}_`)) return name;
  return `idx_${bare}_${name.replace(/^idx_/, '')}`.slice(0, 63);
}

/** `ALTER TABLE … MODIFY` the column to the given type (MySQL/MariaDB only: SQLite rebuilds tables). */
export function modifyColumnStatement(
  dialect: Dialect,
  table: string,
  column: string,
  type: 'varchar-null' | 'longtext-not-null',
  length = 0,
): string | null {
  const definition = type === 'varchar-null' ? `VARCHAR(${length}) NULL` : 'LONGTEXT NOT NULL';
  return dialect.modifyColumn(table, column, definition);
}

/** A UNIQUE key `uk_<column>` on the column, in the engine's syntax: for an event id that must be recorded once. */
export function addUniqueKeyStatement(dialect: Dialect, table: string, column: string): string {
  return dialect.addUniqueKey(table, `uk_${column}`, column);
}
