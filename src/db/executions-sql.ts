import type { LogicalStatus } from '../core/task.js';
import type { Dialect } from './dialect.js';
import type { Fragment } from './fragment.js';
import { FINISHED_STATE, ORPHAN_STATE, type ExecutionsModel } from './profiles/types.js';

/**
 * The state of a job kept as the execution table that holds it (Solid Queue): correlated lookups
 * from the job table (`table`, its id column `id`) into each execution table.
 */
export class ExecutionsSql {
  constructor(
    private readonly dialect: Dialect,
    private readonly model: ExecutionsModel,
    private readonly table: string,
    private readonly id: string,
  ) {}

  private q(name: string): string {
    return this.dialect.quoteId(name);
  }

  /** The job's own id, qualified so that it reads the outer row inside a lookup. */
  private outerId(): string {
    return `${this.table}.${this.q(this.id)}`;
  }

  /** True when `execution` holds the job. */
  held(execution: string): string {
    const e = this.q(execution);
    return `EXISTS (SELECT 1 FROM ${e} WHERE ${e}.${this.q(this.model.jobKey)} = ${this.outerId()})`;
  }

  private finished(): string {
    return `${this.table}.${this.q(this.model.finished)} IS NOT NULL`;
  }

  /** A column of the execution row holding the job (NULL when none does). */
  column(execution: string, column: string): string {
    const e = this.q(execution);
    return `(SELECT ${e}.${this.q(column)} FROM ${e} WHERE ${e}.${this.q(this.model.jobKey)} = ${this.outerId()})`;
  }

  /** The raw state: finished, the first execution's name that holds the job, or orphan. */
  rawStatusExpr(): string {
    const arms = this.model.tables.map((t) => `WHEN ${this.held(t.table)} THEN '${t.raw}'`);
    return `CASE WHEN ${this.finished()} THEN '${FINISHED_STATE}' ${arms.join(' ')} ELSE '${ORPHAN_STATE}' END`;
  }

  /** Rows in any of the logical statuses; `orphans` adds the jobs no execution holds. */
  statusIn(statuses: readonly LogicalStatus[], orphans = false): Fragment {
    const parts: string[] = [];
    if (statuses.includes('success')) parts.push(this.finished());
    const held = this.model.tables.filter((t) => statuses.includes(t.status)).map((t) => this.held(t.table));
    if (held.length)
      parts.push(`(${this.table}.${this.q(this.model.finished)} IS NULL AND (${held.join(' OR ')}))`);
    if (orphans) parts.push(this.orphan());
    return { sql: parts.length ? `(${parts.join(' OR ')})` : '1=0', params: [] };
  }

  /** A job that has not finished and no execution table holds. */
  orphan(): string {
    const none = this.model.tables.map((t) => `NOT ${this.held(t.table)}`);
    return `(${this.table}.${this.q(this.model.finished)} IS NULL AND ${none.join(' AND ')})`;
  }

  /** A claimed job whose process stopped heartbeating by the cutoff (epoch seconds) or is gone. */
  stuckPast(cutoffEpoch: number): Fragment {
    const c = this.model.claimed;
    const e = this.q(c.table);
    const p = this.q(c.processes);
    const sql =
      `EXISTS (SELECT 1 FROM ${e} LEFT JOIN ${p} ON ${p}.${this.q('id')} = ${e}.${this.q(c.process)}` +
      ` WHERE ${e}.${this.q(this.model.jobKey)} = ${this.outerId()}` +
      ` AND (${p}.${this.q('id')} IS NULL OR ${p}.${this.q(c.heartbeat)} <= ${this.dialect.epochParam('datetime')}))`;
    return { sql, params: [cutoffEpoch] };
  }

  /** Since when a claimed job has been held: its claimed execution's creation, as epoch seconds. */
  stuckSince(): string {
    const c = this.model.claimed;
    return this.dialect.epochOf(this.column(c.table, c.since), 'datetime');
  }
}
