/**
 * The lists of the task table (stuck, due, failed) as scan, the console and doctor read them, and
 * the source facts every verb reports.
 */

import type { LogicalField } from '../core/task.js';
import type { BoundSource, JobSystemInfo } from '../db/bind-source.js';
import { and, type Fragment } from '../db/fragment.js';
import {
  store,
  dueWhere,
  filterWhere,
  LIST_STATUS,
  stuckWhere,
  type ListEncoder,
  type ListKind,
  type ListReadOptions,
  type ScanFilter,
} from '../db/port/index.js';

export interface SourceInfo {
  name: string;
  profile: string;
  table: string;
  db: string;
  /** A job system's table: which system and the schema version it records (pg-boss: `pgboss.version`). */
  system?: JobSystemInfo;
}

export interface ScanOptions extends ScanFilter {
  nowEpoch: number;
  stuckAfterMs: number;
  /** Rows per list; 0 lists every row. */
  limit: number;
  /** Which lists to fill (default all three). */
  lists?: ListKind[];
  /**
   * false: on a large table, hold back the figures no index serves (and say so); true: read the
   * whole table for them. Undefined computes every figure without asking (small embedded uses).
   */
  fullScan?: boolean;
  pageSize?: number;
  /**
   * The order of each list: `next-retry` (the default) is (next_retry_time, id), `id` primary-key
   * order, `cheapest` whichever the server reads faster (`id` when walking the primary key beats
   * the list's index, a large share of the table; the list order otherwise).
   */
  order?: ListOrder;
  /** How a whole NDJSON list is read ahead (ListReadOptions.readAhead; default: as the engine gains by it). */
  readAhead?: ListReadOptions['readAhead'];
}

export type ListOrder = 'next-retry' | 'id' | 'cheapest';
export const LIST_ORDERS: readonly ListOrder[] = ['next-retry', 'id'];

export const ALL_LISTS: ListKind[] = ['stuck', 'due', 'failed'];
/**
 * Rows per keyset page. Each page is one statement streamed in constant memory, so a page can be
 * large: every page costs a fresh index dive and statement start (measured ≈0.1–0.2 s on a busy
 * 2-core server), while a page still ends within seconds, so no statement holds a read view long.
 */
export const DEFAULT_PAGE_SIZE = 100_000;

export function sourceInfo(source: BoundSource): SourceInfo {
  return {
    name: source.name,
    profile: source.profile.name,
    table: source.profile.table,
    db: source.db.display,
    ...(source.system ? { system: source.system } : {}),
  };
}

/** What the profile lacks for stuck and due, as notes; undefined entries mean computable. */
export function capabilityNotes(source: BoundSource): { stuck?: string; due?: string } {
  const { sql, profile } = source;
  const statuses = sql.statuses();
  const notes: { stuck?: string; due?: string } = {};
  if (!statuses.includes('processing'))
    notes.stuck = `${profile.name} rows are never processing: stuck is n/a`;
  else if (!sql.has('updatedAt')) notes.stuck = `${profile.name} has no updated_at column: stuck is n/a`;
  if (!statuses.includes('pending'))
    notes.due = `${profile.name} rows are never pending: due is n/a (retry them with \`taskrecon compensate\`)`;
  else if (!sql.has('nextRetryAt')) notes.due = `${profile.name} has no next-retry column: due is n/a`;
  return notes;
}

/** The WHERE of one list, or undefined when the profile cannot have it. */
export function listWhere(source: BoundSource, kind: ListKind, options: ScanOptions) {
  const capability = capabilityNotes(source);
  const filter = filterWhere(source.sql, options);
  if (kind === 'due')
    return capability.due ? undefined : and([dueWhere(source.sql, options.nowEpoch), filter]);
  if (kind === 'stuck') {
    return capability.stuck
      ? undefined
      : and([stuckWhere(source.sql, options.nowEpoch - Math.floor(options.stuckAfterMs / 1000)), filter]);
  }
  return and([source.sql.statusIn([LIST_STATUS[kind]]), filter]);
}

/**
 * How one list is read in the order asked: primary-key order through the primary key when the
 * engine finds that walk cheaper than the list's index (`id` and `cheapest`), else `id` through
 * the server's own plan, or the list order.
 */
async function readOptions(
  source: BoundSource,
  kind: ListKind,
  where: Fragment,
  order: ListOrder | undefined,
): Promise<ListReadOptions> {
  const nullNextRetry = kind !== 'due';
  if (order !== 'cheapest' && order !== 'id') return { nullNextRetry, order: 'next-retry' };
  const tableHint = await store.tasks.primaryKeyWalk(source, where);
  if (tableHint === undefined) return { nullNextRetry, order: order === 'id' ? 'id' : 'next-retry' };
  return { nullNextRetry, order: 'id', tableHint };
}

/** Streams one list's rows (arrays in taskSelect order). */
export function streamList(
  source: BoundSource,
  kind: ListKind,
  options: ScanOptions,
): AsyncGenerator<unknown[]> | undefined {
  const where = listWhere(source, kind, options);
  if (!where) return undefined;
  return (async function* () {
    const read = await readOptions(source, kind, where, options.order);
    yield* store.tasks.listRows(source, where, options.limit, options.pageSize ?? DEFAULT_PAGE_SIZE, read);
  })();
}

/** Streams one list's rows in batches (the fast path of `scan --format ndjson|csv`). */
export function streamListBatches(
  source: BoundSource,
  kind: ListKind,
  options: ScanOptions,
): AsyncGenerator<unknown[][]> | undefined {
  const where = listWhere(source, kind, options);
  if (!where) return undefined;
  return (async function* () {
    const read = await readOptions(source, kind, where, options.order);
    yield* store.tasks.listBatches(source, where, options.limit, options.pageSize ?? DEFAULT_PAGE_SIZE, read);
  })();
}

/**
 * Column types whose text, as the server sends it, is what the driver's value prints as: text,
 * integers, enums and JSON. Others (decimals, floats, booleans, binary, arrays) may print
 * otherwise (`1.50` against `1.5`, `t` against `true`, PostgreSQL's `\x…` for bytea), so lists
 * that read such a column take the row-by-row path.
 */
const WIRE_TEXT_TYPES = new Set([
  'char',
  'varchar',
  'text',
  'tinytext',
  'mediumtext',
  'longtext',
  'enum',
  'json',
  'uuid',
  'tinyint',
  'smallint',
  'mediumint',
  'int',
  'integer',
  'bigint',
]);

/** Fields a list selects as the column's own value (time fields are read as epoch seconds unless stored so). */
const VALUE_FIELDS = [
  'id',
  'bizType',
  'bizId',
  'eventId',
  'attempts',
  'lastError',
  'queue',
  'maxAttempts',
  'connection',
] as const;

/**
 * Whether every column a list reads prints the same from the wire as from the driver's values,
 * so the wire fast path (`streamListEncoded`) writes what the row serializer would.
 */
export function wireEncodable(source: BoundSource): boolean {
  const { profile, columns, sql } = source;
  const byName = new Map(columns.map((c) => [c.name.toLowerCase(), c]));
  const named: string[] = [];
  const fields: LogicalField[] = [
    ...VALUE_FIELDS,
    ...sql.timeFields().filter((f) => sql.timeTypes[f] === 'unix'),
  ];
  for (const field of fields) {
    const ref = profile.fields[field];
    if (ref && 'column' in ref) named.push(ref.column);
  }
  if (profile.status.kind === 'column') named.push(profile.status.column);
  return named.every((name) => WIRE_TEXT_TYPES.has(byName.get(name.toLowerCase())?.dataType ?? ''));
}

/** Streams one list's rows encoded from the wire (needs `db.streamEncoded` or `db.streamTextEncoded`): chunks of output bytes. */
export function streamListEncoded(
  source: BoundSource,
  kind: ListKind,
  options: ScanOptions,
  encoder: ListEncoder,
): AsyncGenerator<Buffer> | undefined {
  const where = listWhere(source, kind, options);
  if (!where) return undefined;
  return (async function* () {
    const read = { ...(await readOptions(source, kind, where, options.order)), readAhead: options.readAhead };
    yield* store.tasks.listEncoded(
      source,
      where,
      options.limit,
      options.pageSize ?? DEFAULT_PAGE_SIZE,
      encoder,
      read,
    );
  })();
}
