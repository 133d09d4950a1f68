import type { LogicalField, LogicalStatus, TimeField, TimeType } from '../../core/task.js';

/**
 * Where a logical field lives: a column, or (built-in profiles only) a key inside a JSON column;
 * there, `firstPath` is read first when the payload has it (`path` otherwise), and `plus` is added
 * to a number (a count the writer logged before its last increment).
 */
export type FieldRef =
  | { column: string }
  | { json: string; path: string; firstPath?: string; plus?: number }
  | { execution: string; read: string };

/**
 * How a table encodes the logical status:
 * - `column`: a status column whose raw values map onto logical statuses;
 * - `reservation`: Laravel's `jobs` — a NULL reservation column is pending, a set one is processing;
 * - `constant`: every row has one status (failed-job tables);
 * - `executions`: the job table of a system that keeps each job's state as the execution table
 *   holding it (Solid Queue): `finished` set is success, else the first execution table holding the
 *   job (`jobKey` pointing at the job's id) names its state; a job in none is an orphan.
 */
export type StatusModel =
  | { kind: 'column'; column: string; values: Partial<Record<LogicalStatus, Array<string | number>>> }
  | { kind: 'reservation'; column: string }
  | { kind: 'constant'; status: LogicalStatus }
  | ExecutionsModel;

/** A job's state as the execution table that holds it (see StatusModel). */
export interface ExecutionsModel {
  kind: 'executions';
  /** Set when the job finished: success. */
  finished: string;
  /** The column of each execution table naming the job (its id). */
  jobKey: string;
  /** In the order they are looked in: the raw state a table stands for, and its logical status. */
  tables: ReadonlyArray<{ raw: string; table: string; status: LogicalStatus }>;
  /** The claimed executions' process and the processes' heartbeat, for stuck jobs. */
  claimed: { table: string; process: string; processes: string; heartbeat: string; since: string };
}

/** The raw state of a job no execution table holds and that has not finished. */
export const ORPHAN_STATE = 'orphan';
/** The raw state of a finished job. */
export const FINISHED_STATE = 'finished';

import type { ProfileKind } from '../../core/task.js';

export type { ProfileKind };

/**
 * Stuck by each job's own expiry (job systems that store it per row): a processing row is stuck
 * once `started + expiry` has passed, or, where the table has a heartbeat, once its last beat is
 * older than its heartbeat interval. The cutoff `--stuck-after` gives is how far past that.
 */
export interface ExpiryStuckModel {
  /** When the current attempt started. */
  started: string;
  /** The expiry column, the first of these the live table has: whole seconds, or an interval. */
  expiry: ReadonlyArray<{ column: string; unit: 'seconds' | 'interval' }>;
  /** A heartbeat (`at` the last beat, `seconds` the interval, NULL when the job sends none), read where the table has both. */
  heartbeat?: { at: string; seconds: string };
}

/**
 * The job systems taskrecon writes as their own admin tools do: pg-boss through its own client,
 * River and Oban with the statements their own retry and cancel run, Solid Queue as its own
 * FailedExecution#retry and discard write.
 */
export type JobSystem = 'pg-boss' | 'river' | 'oban' | 'solid-queue';

/** The compensate actions a job system's writer has an operation for. */
export type JobSystemAction = 'retry' | 'forget' | 'mark-compensated';

export interface Profile {
  name: string;
  summary: string;
  kind: ProfileKind;
  table: string;
  fields: Partial<Record<LogicalField, FieldRef>>;
  /** Declared time column types; missing ones are read from the live schema. */
  timeTypes: Partial<Record<TimeField, TimeType>>;
  status: StatusModel;
  /**
   * A processing row not touched for this long is stuck (its lease has expired); with `stuck`,
   * how long past the row's own expiry.
   */
  defaultStuckAfterMs: number;
  /** Stuck by each row's own expiry instead of `updatedAt` (see ExpiryStuckModel). */
  stuck?: ExpiryStuckModel;
  /** The job system whose own client writes this table (kind `job-system`). */
  system?: JobSystem;
  /** For a job system: the compensate actions its writer has an operation for. */
  systemActions?: readonly JobSystemAction[];
  /** Time columns without a zone hold UTC wall-clock times (Oban), whatever the session's zone. */
  utcWallClock?: boolean;
  /** Columns the writer sets besides the mapped ones: a table without them is not the system's. */
  writtenColumns?: readonly string[];
  /** For the `async-task` shape, the `last_error` length the seed defines; doctor compares it with the table. */
  expectedLastErrorLength?: number;
  /** Why a capability is missing, keyed by what is missing, for clear messages. */
  notes?: string[];
}

export function columnOf(profile: Profile, field: LogicalField): string | undefined {
  const ref = profile.fields[field];
  return ref && 'column' in ref ? ref.column : undefined;
}

/** The column the status is read from (a job table's `finished` column); undefined for a constant status. */
export function statusColumnOf(profile: Profile): string | undefined {
  const model = profile.status;
  if (model.kind === 'constant') return undefined;
  return model.kind === 'executions' ? model.finished : model.column;
}

/** Every physical column the profile reads, for validation against the live schema. */
export function mappedColumns(profile: Profile): Array<{ field: LogicalField | 'status'; column: string }> {
  const out: Array<{ field: LogicalField | 'status'; column: string }> = [];
  for (const [field, ref] of Object.entries(profile.fields) as Array<[LogicalField, FieldRef]>) {
    if ('execution' in ref) continue; // a column of an execution table, checked with it
    out.push({ field, column: 'column' in ref ? ref.column : ref.json });
  }
  const status = statusColumnOf(profile);
  if (status) out.push({ field: 'status', column: status });
  return out;
}
