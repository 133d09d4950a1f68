import type { LogicalField, LogicalStatus, Task, TaskId, TimeField, TimeType } from '../core/task.js';
import { LOGICAL_STATUSES, TIME_FIELDS } from '../core/task.js';
import type { Dialect, PageKeyForm } from './dialect.js';
import { placeholders, type Fragment } from './fragment.js';
import { ExecutionsSql } from './executions-sql.js';
import type { ExpiryStuck, LiveColumns } from './live-columns.js';
import { FINISHED_STATE, type Profile } from './profiles/types.js';
import { toId, toInt, toIso, toText } from './values.js';

export { placeholders } from './fragment.js';
export { toId, toInt, toIso, toText } from './values.js';
export type { ExpiryStuck } from './live-columns.js';

/** How many characters of `last_error` a list shows; `show` prints it whole. */
export const LIST_ERROR_CHARS = 1000;

/** The column of a list row (listSelect()) holding the exact next-retry page key, after taskSelect()'s 13. */
export const LIST_PAGE_KEY = 13;

/** The alias whole rows of a job table kept by executions carry its raw state under (selectWholeRows). */
export const EXECUTION_STATE = 'taskrecon_state';

/**
 * Translates logical fields and statuses into SQL for one bound source (a profile on a live
 * table whose time column types are known). Identifiers are quoted; values are always bound.
 */
export class TaskSql {
  readonly table: string;

  constructor(
    readonly dialect: Dialect,
    readonly profile: Profile,
    readonly timeTypes: Partial<Record<TimeField, TimeType>>,
    live: LiveColumns = {},
  ) {
    this.table = dialect.quoteId(profile.table);
    this.expiryStuck = live.expiryStuck;
    this.jsonAsText = new Set(live.jsonAsText ?? []);
    const id = profile.fields.id;
    this.executions =
      profile.status.kind === 'executions' && id && 'column' in id
        ? new ExecutionsSql(dialect, profile.status, this.table, id.column)
        : undefined;
    this.arrayLastAsText = new Set(live.arrayLastAsText ?? []);
    this.textId = live.textId === true;
  }

  /** The id column holds text (LiveColumns.textId): ids read back are bound and printed as text. */
  readonly textId: boolean;

  /** An id read from the table as the table compares it: text for a text id column, else toId(). */
  id(value: unknown): TaskId {
    return this.textId && value !== null && value !== undefined ? String(value) : toId(value);
  }

  /** Set for a job table whose state is the execution table holding the job (Solid Queue). */
  readonly executions: ExecutionsSql | undefined;

  private readonly arrayLastAsText: ReadonlySet<LogicalField>;

  readonly expiryStuck: ExpiryStuck | undefined;
  private readonly jsonAsText: ReadonlySet<LogicalField>;

  /**
   * Processing rows whose lease ran out by the cutoff (now − stuck-after): `updatedAt ≤ cutoff`; with
   * a per-row expiry, `started + expiry ≤ cutoff`, or a heartbeat older than its interval at the
   * cutoff. An interval column (pg-boss 10.x's `expire_in`) exists on PostgreSQL only, where
   * `EXTRACT(EPOCH FROM …)` reads it as seconds.
   */
  stuckPast(cutoffEpoch: number): Fragment {
    if (this.executions) return this.executions.stuckPast(cutoffEpoch);
    const rule = this.expiryStuck;
    if (!rule) return this.timeCompare('updatedAt', '<=', cutoffEpoch);
    const q = (c: string) => this.dialect.quoteId(c);
    const expiry =
      rule.expiry.unit === 'seconds' ? q(rule.expiry.column) : `EXTRACT(EPOCH FROM ${q(rule.expiry.column)})`;
    const parts = [`${this.dialect.epochOf(q(rule.started), rule.startedType)} + ${expiry} <= ?`];
    const params: unknown[] = [cutoffEpoch];
    if (rule.heartbeat) {
      const beat = this.dialect.epochOf(q(rule.heartbeat.at), rule.heartbeat.atType);
      parts.push(`${beat} + ${q(rule.heartbeat.seconds)} <= ?`);
      params.push(cutoffEpoch);
    }
    return { sql: `(${parts.join(' OR ')})`, params };
  }

  /** Since when a stuck row has been held, as epoch seconds (its start where rows carry their own expiry). */
  stuckSince(): string | undefined {
    if (this.executions) return this.executions.stuckSince();
    const rule = this.expiryStuck;
    if (!rule) return this.epoch('updatedAt');
    return this.dialect.epochOf(this.dialect.quoteId(rule.started), rule.startedType);
  }

  /** Jobs no execution holds and not finished (a job table kept by executions); undefined elsewhere. */
  orphanWhere(): Fragment | undefined {
    return this.executions ? { sql: this.executions.orphan(), params: [] } : undefined;
  }

  has(field: LogicalField): boolean {
    return this.profile.fields[field] !== undefined;
  }

  /** The expression of a logical field, or undefined when the profile lacks it. */
  expr(field: LogicalField): string | undefined {
    const ref = this.profile.fields[field];
    if (!ref) return undefined;
    if ('execution' in ref) return this.executions?.column(ref.execution, ref.read) ?? 'NULL';
    if ('column' in ref) {
      const column = this.dialect.quoteId(ref.column);
      if (this.arrayLastAsText.has(field))
        return this.dialect.castText(`${column}[array_upper(${column}, 1)]`);
      return this.jsonAsText.has(field) ? this.dialect.castText(column) : column;
    }
    const json = this.dialect.quoteId(ref.json);
    let value = this.dialect.jsonText(json, ref.path);
    if (ref.firstPath) value = `COALESCE(${this.dialect.jsonText(json, ref.firstPath)}, ${value})`;
    return ref.plus ? `(${this.dialect.castInt(value)} + ${Math.trunc(ref.plus)})` : value;
  }

  /**
   * The biz type, or a typed NULL for a source without one: what GROUP BY and SELECT take alike
   * (PostgreSQL refuses a bare NULL, a non-integer constant, in GROUP BY).
   */
  bizTypeExpr(): string {
    return this.expr('bizType') ?? this.dialect.castText('NULL');
  }

  /** A time field as epoch seconds (`exact`: with its fraction of a second, Dialect.exactEpochOf). */
  epoch(field: TimeField, exact = false): string | undefined {
    const [col, of] = [this.expr(field), exact ? this.dialect.exactEpochOf : this.dialect.epochOf];
    return col ? of(col, this.timeTypes[field] ?? 'datetime') : undefined;
  }

  /** A time field's exact value as a keyset page key (Dialect.pageKeyOf), bound back by pageKeyParam(). */
  pageKey(field: TimeField): string | undefined {
    const col = this.expr(field);
    return col ? this.dialect.pageKeyOf(col, this.timeTypes[field] ?? 'datetime') : undefined;
  }

  /** The placeholder a page key of `field` is bound to, comparable with the bare column. */
  pageKeyParam(field: TimeField): string {
    return this.dialect.pageKeyParam(this.timeTypes[field] ?? 'datetime');
  }

  /** What a page key of `field` looks like (Dialect.pageKeyForm). */
  pageKeyForm(field: TimeField): PageKeyForm {
    return this.dialect.pageKeyForm(this.timeTypes[field] ?? 'datetime');
  }

  /** `field <op> cutoff`, the cutoff bound as epoch seconds (index-friendly: the column stays bare). */
  timeCompare(field: TimeField, op: '<=' | '<' | '>=' | '>', epochSeconds: number): Fragment {
    const col = this.expr(field);
    if (!col) throw new Error(`profile ${this.profile.name} has no ${field}`);
    return {
      sql: `${col} ${op} ${this.dialect.epochParam(this.timeTypes[field] ?? 'datetime')}`,
      params: [epochSeconds],
    };
  }

  /** The database's now, in the type of a time field, for writes. */
  nowOf(field: TimeField): string {
    return this.dialect.nowOf(this.timeTypes[field] ?? 'datetime');
  }

  /** Statuses this table can hold. */
  statuses(): LogicalStatus[] {
    const model = this.profile.status;
    if (model.kind === 'constant') return [model.status];
    if (model.kind === 'reservation') return ['pending', 'processing'];
    if (model.kind === 'executions')
      return LOGICAL_STATUSES.filter((s) => s === 'success' || model.tables.some((t) => t.status === s));
    return LOGICAL_STATUSES.filter((s) => (model.values[s]?.length ?? 0) > 0);
  }

  /** A predicate true for rows in any of the given logical statuses ('0=1' when none can exist). */
  statusIn(statuses: readonly LogicalStatus[]): Fragment {
    const model = this.profile.status;
    if (model.kind === 'constant')
      return { sql: statuses.includes(model.status) ? '1=1' : '1=0', params: [] };
    if (model.kind === 'reservation') {
      const col = this.dialect.quoteId(model.column);
      const pending = statuses.includes('pending');
      const processing = statuses.includes('processing');
      if (pending && processing) return { sql: '1=1', params: [] };
      if (pending) return { sql: `${col} IS NULL`, params: [] };
      if (processing) return { sql: `${col} IS NOT NULL`, params: [] };
      return { sql: '1=0', params: [] };
    }
    if (this.executions) return this.executions.statusIn(statuses);
    if (model.kind === 'executions') return { sql: '1=0', params: [] };
    const values = statuses.flatMap((s) => model.values[s] ?? []);
    if (values.length === 0) return { sql: '1=0', params: [] };
    const col = this.dialect.quoteId(model.column);
    if (values.length === 1) return { sql: `${col} = ?`, params: values };
    return { sql: `${col} IN (${placeholders(values)})`, params: values };
  }

  /** The raw value a write stores for a logical status (the first one mapped). */
  rawStatus(status: LogicalStatus): string | number | undefined {
    const model = this.profile.status;
    return model.kind === 'column' ? model.values[status]?.[0] : undefined;
  }

  /**
   * The status expression as stored (for GROUP BY), or a constant for tables without a status
   * column: cast, since a bare string literal is no GROUP BY expression everywhere (PostgreSQL
   * refuses a non-integer constant there).
   */
  rawStatusExpr(): string {
    const model = this.profile.status;
    if (model.kind === 'column') return this.dialect.quoteId(model.column);
    if (this.executions) return this.executions.rawStatusExpr();
    if (model.kind === 'reservation') {
      return `CASE WHEN ${this.dialect.quoteId(model.column)} IS NULL THEN 'pending' ELSE 'processing' END`;
    }
    if (model.kind === 'executions') return this.dialect.castText('NULL');
    return this.dialect.castText(`'${model.status}'`);
  }

  /** Maps a stored status value onto its logical status. */
  logicalStatus(raw: unknown): LogicalStatus | 'unknown' {
    const model = this.profile.status;
    if (model.kind === 'constant') return model.status;
    if (model.kind === 'reservation') return raw === 'pending' || raw === 'processing' ? raw : 'unknown';
    if (model.kind === 'executions') {
      if (raw === FINISHED_STATE) return 'success';
      return model.tables.find((t) => t.raw === raw)?.status ?? 'unknown';
    }
    for (const status of LOGICAL_STATUSES) {
      // Loose match: a tinyint column may come back as a number or a string depending on the driver.
      if (model.values[status]?.some((v) => String(v) === String(raw))) return status;
    }
    return 'unknown';
  }

  /** The SELECT list of the task object, in TASK_COLUMNS order; `errorChars` caps last_error. */
  taskSelect(errorChars: number | undefined = LIST_ERROR_CHARS): string {
    const nul = 'NULL';
    const lastError = this.expr('lastError');
    return [
      this.expr('id') ?? nul,
      this.expr('bizType') ?? nul,
      this.expr('bizId') ?? nul,
      this.expr('eventId') ?? nul,
      this.rawStatusExpr(),
      this.expr('attempts') ?? nul,
      this.epoch('nextRetryAt') ?? nul,
      lastError ? (errorChars ? this.dialect.prefix(lastError, errorChars) : lastError) : nul,
      this.epoch('createdAt') ?? nul,
      this.epoch('updatedAt') ?? nul,
      this.expr('queue') ?? nul,
      this.expr('maxAttempts') ?? nul,
      this.expr('connection') ?? nul,
    ].join(', ');
  }

  /**
   * The SELECT list of a list page: taskSelect(), then the exact next-retry page key (column
   * LIST_PAGE_KEY; NULL for tables without a next-retry time), which no output prints. Named
   * apart: unnamed, PostgreSQL would call `CAST(next_retry_time AS TEXT)` next_retry_time, and a
   * page's ORDER BY next_retry_time would sort that text instead of reading the index.
   */
  listSelect(): string {
    return `${this.taskSelect()}, ${this.pageKey('nextRetryAt') ?? 'NULL'} AS taskrecon_page_key`;
  }

  /** Builds a task object from a row selected with taskSelect() as an array. */
  toTask(row: readonly unknown[]): Task {
    const task: Task = {
      id: this.id(row[0]),
      bizType: toText(row[1]),
      bizId: toText(row[2]),
      eventId: toText(row[3]),
      status: this.logicalStatus(row[4]),
      attempts: toInt(row[5]),
      nextRetryAt: toIso(row[6]),
      lastError: toText(row[7]),
      createdAt: toIso(row[8]),
      updatedAt: toIso(row[9]),
      rawStatus: row[4] === null || row[4] === undefined ? null : (row[4] as string | number),
    };
    task.queue = toText(row[10]);
    task.connection = toText(row[12]);
    if (this.has('maxAttempts')) task.maxAttempts = toInt(row[11]);
    return task;
  }

  /** Time fields this profile has. */
  timeFields(): TimeField[] {
    return TIME_FIELDS.filter((f) => this.has(f));
  }
}
