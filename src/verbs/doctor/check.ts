import type { Row } from '../../db/types.js';

/** A check's verdict: `fail` makes doctor exit 1; `warn` is worth knowing but scan's numbers stay right. */
export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One statement taskrecon runs, with the plan the engine chose for it. */
export interface ExplainedQuery {
  /** What the statement is for, e.g. `due count`. */
  name: string;
  sql: string;
  params: unknown[];
  /** The engine's EXPLAIN rows, as it returned them. */
  plan: Row[];
  /** The indexes the plan reads through (empty for a full table scan). */
  indexes: string[];
  /** True when the plan reads the whole table. */
  fullScan: boolean;
  /**
   * The plan as readable lines, one per node (PostgreSQL's JSON plan); absent where the plan rows
   * read as a table themselves.
   */
  summary?: string[];
}

export interface DoctorCheck {
  /** A stable name, e.g. `scan index`, `time zones`. */
  name: string;
  status: CheckStatus;
  message: string;
  /** How to fix it; null when there is nothing to do. */
  hint: string | null;
  /** The plans that back an index verdict. */
  explain?: ExplainedQuery[];
}

export function check(
  name: string,
  status: CheckStatus,
  message: string,
  hint: string | null = null,
): DoctorCheck {
  return { name, status, message, hint };
}
