import type { Dialect } from '../dialect.js';

/**
 * How a task key and a business key are joined in SQL when both tables are on one server.
 * A varchar key against an integer key is compared as text of the integer, in both directions:
 * MariaDB's own `varchar = int` converts both to DOUBLE, so 'abc' would match 0 and '042' would
 * match 42 — silent false matches a reconciliation must not make. The integer side of the
 * predicate keeps the integer index usable; the text side decides equality.
 */

/** The side of a key: its SQL expression and whether the column is an integer type. */
export interface KeyExpr {
  sql: string;
  isInt: boolean;
}

export function castText(dialect: Dialect, sql: string): string {
  return dialect.castText(sql);
}

export function castInt(dialect: Dialect, sql: string): string {
  return dialect.castInt(sql);
}

/**
 * The predicate "business key `business` matches task key `task`", written for the join that
 * looks up `lookedUp` (its index is the one used): the looked-up side stays a bare column.
 */
export function keyMatch(dialect: Dialect, lookedUp: KeyExpr, other: KeyExpr): string {
  if (lookedUp.isInt === other.isInt) return `${lookedUp.sql} = ${other.sql}`;
  if (lookedUp.isInt) {
    // int column looked up by a text value: only the integer's own decimal text matches.
    return `${lookedUp.sql} = ${castInt(dialect, other.sql)} AND ${castText(dialect, lookedUp.sql)} = ${other.sql}`;
  }
  // text column looked up by an integer value: compare with its decimal text.
  return `${lookedUp.sql} = ${castText(dialect, other.sql)}`;
}

const INTEGER_TYPES = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint']);

export function isIntegerType(dataType: string): boolean {
  return INTEGER_TYPES.has(dataType.toLowerCase().replace(/ unsigned$/, ''));
}
