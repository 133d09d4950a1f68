import type { LogicalField, TimeField, TimeType } from '../core/task.js';
import { TIME_FIELDS } from '../core/task.js';
import { TaskreconError } from '../errors.js';
import type { Profile } from './profiles/types.js';
import { mappedColumns } from './profiles/types.js';
import { SUPPORTED_VERSIONS } from './job-system-writer.js';
import { readJobSystemVersion, type JobSystemInfo } from './sql/job-system.js';
import { hasTextId, type ExpiryStuck } from './live-columns.js';
import { TaskSql } from './task-sql.js';
import type { ColumnInfo, Db } from './types.js';

export type { JobSystemInfo } from './sql/job-system.js';

/** A profile checked against the live table: what doctor reports and what other commands refuse to run on. */
export interface SchemaProblem {
  severity: 'error' | 'warning';
  check: string;
  message: string;
  hint: string;
}

export interface BoundSource {
  name: string;
  profile: Profile;
  db: Db;
  sql: TaskSql;
  columns: ColumnInfo[];
  problems: SchemaProblem[];
  /** For a job system's table: which system, and the schema version its own bookkeeping records. */
  system?: JobSystemInfo;
}

const NUMERIC = new Set([
  'tinyint',
  'smallint',
  'mediumint',
  'int',
  'integer',
  'bigint',
  'decimal',
  'numeric',
]);
const TEXTUAL = new Set([
  'char',
  'varchar',
  'text',
  'tinytext',
  'mediumtext',
  'longtext',
  'enum',
  'set',
  'json',
  'blob',
  'longblob',
  'mediumblob',
]);

/** The time type of a live column: datetime, timestamp or unix; undefined when it holds no time. */
export function timeTypeOfColumn(column: ColumnInfo): TimeType | undefined {
  if (column.dataType === 'datetime' || column.dataType === 'date') return 'datetime';
  if (column.dataType === 'timestamp') return 'timestamp';
  if (NUMERIC.has(column.dataType)) return 'unix';
  return undefined;
}

/**
 * Reads the live table and checks the profile against it: the table exists, every mapped column
 * exists with a type that fits, time columns have a known type. Returns the problems found;
 * `bindSource` refuses to go on when any is an error.
 */
export async function inspectSource(db: Db, profile: Profile, name: string): Promise<BoundSource> {
  const columns = await db.columns(profile.table);
  const problems: SchemaProblem[] = [];
  const timeTypes: Partial<Record<TimeField, TimeType>> = { ...profile.timeTypes };
  if (!columns) {
    problems.push({
      severity: 'error',
      check: 'table',
      message: `table '${profile.table}' does not exist in ${db.display}`,
      hint:
        profile.name === 'async-task' || profile.name === 'job-retries'
          ? `Create it with \`taskrecon init --profile ${profile.name}\`, or name the right table with --table.`
          : 'Name the right table with --table or `table:` in the source.',
    });
    return { name, profile, db, sql: new TaskSql(db.dialect, profile, timeTypes), columns: [], problems };
  }
  const byName = new Map(columns.map((c) => [c.name.toLowerCase(), c]));
  for (const { field, column } of mappedColumns(profile)) {
    const live = byName.get(column.toLowerCase());
    if (!live) {
      problems.push({
        severity: 'error',
        check: 'column',
        message: `table '${profile.table}' has no column '${column}' (mapped to ${field} by profile ${profile.name})`,
        hint: `Map ${field} to an existing column under \`columns:\` in the source, or set it to null if the table has none.`,
      });
      continue;
    }
    const problem = typeProblem(profile, field, live, timeTypes);
    if (problem) problems.push(problem);
  }
  for (const column of profile.writtenColumns ?? []) {
    if (byName.has(column.toLowerCase())) continue;
    problems.push({
      severity: 'error',
      check: 'column',
      message: `table '${profile.table}' has no column '${column}' (written by profile ${profile.name}): it is not ${profile.system ?? profile.name}'s job table`,
      hint: `Point the source at ${profile.system ?? profile.name}'s own job table (\`table: ${profile.table}\`, schema-qualified when it lives elsewhere).`,
    });
  }
  const zoneProblem = utcWallClockProblem(db, profile, timeTypes);
  if (zoneProblem) problems.push(zoneProblem);
  const expiryStuck = resolveExpiry(profile, byName, problems);
  const lastError = profile.fields.lastError;
  const jsonAsText =
    lastError && 'column' in lastError && byName.get(lastError.column.toLowerCase())?.dataType === 'json'
      ? (['lastError'] as const)
      : [];
  await checkExecutions(db, profile, problems);
  const arrayLastAsText =
    lastError &&
    'column' in lastError &&
    byName.get(lastError.column.toLowerCase())?.columnType.endsWith('[]')
      ? (['lastError'] as const)
      : [];
  const textId = hasTextId({ profile, columns });
  const sql = new TaskSql(db.dialect, profile, timeTypes, {
    expiryStuck,
    jsonAsText,
    arrayLastAsText,
    textId,
  });
  const bound: BoundSource = { name, profile, db, sql, columns, problems };
  if (profile.system && profile.system !== 'solid-queue') {
    bound.system = await readJobSystemVersion(db, profile.system, profile.table);
    const tooOld = olderThanRead(bound.system);
    if (tooOld) problems.push(tooOld);
  }
  return bound;
}

/**
 * The execution tables of a job table kept by executions (Solid Queue), each with the columns
 * taskrecon reads or writes, and the processes table the stuck check joins; a missing one is a
 * schema error (the source points at another system's table, or another database).
 */
async function checkExecutions(db: Db, profile: Profile, problems: SchemaProblem[]): Promise<void> {
  const model = profile.status;
  if (model.kind !== 'executions') return;
  const wanted = new Map<string, string[]>();
  for (const t of model.tables) wanted.set(t.table, [model.jobKey]);
  wanted.get(model.claimed.table)?.push(model.claimed.process, model.claimed.since);
  wanted.set(model.claimed.processes, ['id', model.claimed.heartbeat]);
  for (const ref of Object.values(profile.fields))
    if (ref && 'execution' in ref) wanted.get(ref.execution)?.push(ref.read);
  for (const [table, needed] of wanted) {
    const live = await db.columns(table);
    const names = new Set((live ?? []).map((c) => c.name.toLowerCase()));
    const missing = live ? needed.filter((c) => !names.has(c.toLowerCase())) : [];
    if (live && missing.length === 0) continue;
    problems.push({
      severity: 'error',
      check: 'table',
      message: live
        ? `table '${table}' has no column ${missing.map((c) => `'${c}'`).join(', ')} (read by profile ${profile.name})`
        : `table '${table}' does not exist in ${db.display}: profile ${profile.name} reads a job's state from it`,
      hint: `Point the source at the database holding ${profile.name}'s tables (its job table '${profile.table}' and its execution tables), created by its own schema.`,
    });
  }
}

/**
 * A River or Oban table migrated before the states the profile maps existed (River's `pending`,
 * Oban's `cancelled`): the enum would reject the profile's own state names.
 */
function olderThanRead(system: JobSystemInfo): SchemaProblem | undefined {
  if (system.name === 'pg-boss' || system.name === 'solid-queue' || system.schemaVersion === null)
    return undefined;
  const range = SUPPORTED_VERSIONS[system.name];
  if (system.schemaVersion >= range.min) return undefined;
  return {
    severity: 'error',
    check: 'version',
    message: `${system.name} migration version ${system.schemaVersion} predates the states taskrecon reads (versions ${range.min} to ${range.max})`,
    hint: `Run ${system.name}'s own migrations up to version ${range.min} or later.`,
  };
}

const UTC_ZONES = new Set(['utc', 'etc/utc', 'uct', 'etc/uct', 'gmt', 'etc/gmt', 'zulu', '+00:00', '00:00']);

/**
 * A profile whose zone-less times are UTC (Oban) read through a session in another zone would be
 * off by the zone's offset: stuck and due would be wrong by hours. Refused, naming the fix.
 */
function utcWallClockProblem(
  db: Db,
  profile: Profile,
  timeTypes: Partial<Record<TimeField, TimeType>>,
): SchemaProblem | undefined {
  if (!profile.utcWallClock || UTC_ZONES.has(db.sessionTimeZone.toLowerCase())) return undefined;
  if (!Object.values(timeTypes).includes('datetime')) return undefined;
  return {
    severity: 'error',
    check: 'time-zone',
    message: `${profile.name} stores UTC times in timestamp without time zone, but this connection reads them in ${db.sessionTimeZone}`,
    hint: "Set `appTimeZone: UTC` in the config (or the database's TimeZone to UTC) for this source, so its times read as the UTC they are.",
  };
}

/**
 * A per-row expiry (the profile's `stuck` model) against the live columns: the first expiry column
 * the table has (pg-boss 11+ `expire_seconds`, 10.x `expire_in`), and the heartbeat where both of its
 * columns exist. A table with neither expiry column is a schema error.
 */
function resolveExpiry(
  profile: Profile,
  byName: Map<string, ColumnInfo>,
  problems: SchemaProblem[],
): ExpiryStuck | undefined {
  const model = profile.stuck;
  if (!model) return undefined;
  const timeOf = (name: string) => {
    const live = byName.get(name.toLowerCase());
    return live ? timeTypeOfColumn(live) : undefined;
  };
  const startedType = timeOf(model.started);
  const expiry = model.expiry.find((e) => byName.has(e.column.toLowerCase()));
  if (!startedType || !expiry) {
    problems.push({
      severity: 'error',
      check: 'column',
      message: `table '${profile.table}' has no ${startedType ? model.expiry.map((e) => `'${e.column}'`).join(' or ') : `time column '${model.started}'`} (read by profile ${profile.name} for stuck jobs)`,
      hint: `Point the source at ${profile.name}'s own job table (\`table: <schema>.job\`).`,
    });
    return undefined;
  }
  const beat = model.heartbeat;
  const atType = beat ? timeOf(beat.at) : undefined;
  const heartbeat =
    beat && atType && byName.has(beat.seconds.toLowerCase()) ? { ...beat, atType } : undefined;
  return { started: model.started, startedType, expiry, ...(heartbeat ? { heartbeat } : {}) };
}

/** Checks one mapped column's type; fills in the time type it reads from the live schema. */
function typeProblem(
  profile: Profile,
  field: LogicalField | 'status',
  live: ColumnInfo,
  timeTypes: Partial<Record<TimeField, TimeType>>,
): SchemaProblem | undefined {
  const ref = field === 'status' ? undefined : profile.fields[field];
  if (ref && 'json' in ref) return undefined; // a key inside the payload: any text column will do
  const wrong = (expected: string): SchemaProblem => ({
    severity: 'error',
    check: 'type',
    message: `column '${live.name}' (${field}) is ${live.columnType}, expected ${expected}`,
    hint: `Map ${field} to the right column, or fix the column type.`,
  });
  if ((TIME_FIELDS as readonly string[]).includes(field)) {
    const detected = timeTypeOfColumn(live);
    if (!detected) return wrong('DATETIME, TIMESTAMP or an integer of unix seconds');
    const declared = profile.timeTypes[field as TimeField];
    if (declared && (declared === 'unix') !== (detected === 'unix'))
      return wrong(declared === 'unix' ? 'unix seconds (an integer)' : 'DATETIME or TIMESTAMP');
    timeTypes[field as TimeField] = declared ?? detected;
    return undefined;
  }
  if (field === 'attempts' || field === 'maxAttempts') {
    return NUMERIC.has(live.dataType) ? undefined : wrong('an integer');
  }
  if (field === 'status' && profile.status.kind === 'column') {
    const values = Object.values(profile.status.values).flat();
    const numericValues = values.every((v) => typeof v === 'number');
    if (numericValues && !NUMERIC.has(live.dataType))
      return wrong('an integer status (the profile maps numbers)');
    if (!numericValues && !TEXTUAL.has(live.dataType))
      return wrong('a string or ENUM status (the profile maps strings)');
  }
  return undefined;
}

/** Like inspectSource, but stops with exit 3 on the first schema error, naming it and how to fix it. */
export async function bindSource(db: Db, profile: Profile, name: string): Promise<BoundSource> {
  const bound = await inspectSource(db, profile, name);
  const error = bound.problems.find((p) => p.severity === 'error');
  if (error) {
    throw new TaskreconError(error.message, {
      code: 'SCHEMA',
      hint: `${error.hint} Run \`taskrecon doctor\` for a full check.`,
    });
  }
  return bound;
}
