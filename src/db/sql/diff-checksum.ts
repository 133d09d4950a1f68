// Over 300 lines: the digest and bisection statements of a cross-server diff, for every key kind, kept together so both sides hash alike.
import {
  HASH_SPACE,
  HASH_SUM_MODULUS,
  type KeyHashFunction,
  type KeySemantics,
} from '../../core/diff-keys.js';
import { restrictingParents, type HashKind, type LevelQuery } from '../../core/diff-levels.js';
import { hashesInSql, type Dialect } from '../dialect.js';
import type { Fragment } from '../fragment.js';
import { placeholders } from '../task-sql.js';
import type { Db, Queryable } from '../types.js';
import { castText } from './diff-keys.js';

/**
 * The statements of a cross-server diff, where the two tables cannot be joined. Each side is
 * reduced to digests of segments of the key hash space — a 32-bit hash of the key in its normal
 * form (src/core/diff-keys.ts: CRC32, or MD5's first bytes where PostgreSQL takes part), computed
 * by the server — and only mismatching segments are split further or read row by row. SQLite has
 * no hash in SQL: its side streams keys and hashes them in the client (an embedded file is read
 * without a network hop). Every statement reads only.
 */

export interface CrossTaskSide {
  dialect: Dialect;
  table: string;
  id: string;
  key: string;
  keyIsInt: boolean;
  /** The key column stores UTF-8 (or ASCII) bytes: its normal form needs no conversion to hash. */
  keyIsUtf8: boolean;
  /** The hash both sides compute (core/diff-keys.ts). */
  hash: KeyHashFunction;
  eventId: string | null;
  bizType: string;
  bizTypeValue: string;
  rawStatus: string;
  /** CASE expression: 1 done, 2 open, 0 other (see sql/diff.ts). */
  role: Fragment;
  /** 1 when the task is inside the --since/--until window. */
  inWindow: Fragment;
  /** The --since/--until window as a predicate ('1=1' without one). */
  window: Fragment;
  /** True for a task whose status is not one the rule calls done (NULL and unmapped values included). */
  notDone: Fragment;
}

export interface CrossBusinessSide {
  dialect: Dialect;
  table: string;
  key: string;
  keyIsInt: boolean;
  keyIsUtf8: boolean;
  hash: KeyHashFunction;
  where?: string;
}

/** A side's key column, as the hash statements need it. */
export type HashedKey = Pick<CrossTaskSide, 'dialect' | 'key' | 'keyIsInt' | 'keyIsUtf8' | 'hash'>;

/** The normal form of a key column as SQL (MariaDB/MySQL, PostgreSQL), matching normalizeKey(). */
export function normalizedKeySql(column: HashedKey, semantics: KeySemantics): string {
  let sql = column.keyIsInt ? castText(column.dialect, column.key) : column.key;
  if (semantics.padSpace) sql = `TRIM(TRAILING ' ' FROM ${sql})`;
  if (semantics.caseInsensitive) sql = column.dialect.lowerCase(sql);
  return sql;
}

/**
 * The hash of the normal form's UTF-8 bytes (keyHash() in the client). A text column already in
 * UTF-8 (or ASCII) has those bytes as it is, so the conversion, a copy per row, is left out.
 */
export function hashSql(column: HashedKey, semantics: KeySemantics): string {
  const normal = normalizedKeySql(column, semantics);
  return column.dialect.keyHashSql(column.hash, normal, column.keyIsUtf8 && !column.keyIsInt);
}

/** Whether a collation's character set stores text as UTF-8 bytes (utf8mb4, utf8mb3, ASCII). */
export function utf8Collation(collation: string | null): boolean {
  return collation !== null && /^(utf8mb4|utf8mb3|utf8|ascii)_/i.test(collation);
}

/**
 * Which hash a digest is made of. `exact`: the hash of the key as stored (the column's bytes, an
 * integer's decimal text) — byte-identical key multisets are identical in every normal form too,
 * so when these digests agree the (dearer) normal form is never computed. `normal`: the hash of
 * the normal form, which decides whenever the exact digests differ.
 */
function keyHashSql(column: HashedKey, semantics: KeySemantics, kind: HashKind): string {
  if (kind === 'normal') return hashSql(column, semantics);
  const stored = column.keyIsInt ? castText(column.dialect, column.key) : column.key;
  return column.dialect.keyHashSql(column.hash, stored, true);
}

/** The hash of a key in SQL, or 0 on SQLite (no hash in SQL: the client hashes). */
function hashOrZero(column: HashedKey, semantics: KeySemantics): string {
  return hashesInSql(column.dialect) ? hashSql(column, semantics) : '0';
}

function taskRowsSql(t: CrossTaskSide, semantics: KeySemantics): Fragment {
  return {
    sql:
      `SELECT ${hashOrZero(t, semantics)} AS h, ${t.role.sql} AS r, ${t.inWindow.sql} AS w, ${t.id} AS id, ` +
      `${t.key} AS k, ${t.eventId ?? 'NULL'} AS e, ${t.rawStatus} AS s FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key} IS NOT NULL`,
    params: [...t.role.params, ...t.inWindow.params, t.bizTypeValue],
  };
}

/**
 * The task side's key hashes, with the role only when asked: without it the statement reads
 * (biz type, key) index entries and no table row.
 */
function taskHashesSql(
  t: CrossTaskSide,
  semantics: KeySemantics,
  kind: HashKind,
  withRole: boolean,
): Fragment {
  const hash = keyHashSql(t, semantics, kind);
  return {
    sql: `SELECT ${hash} AS h${withRole ? `, ${t.role.sql} AS r` : ''} FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key} IS NOT NULL`,
    params: [...(withRole ? t.role.params : []), t.bizTypeValue],
  };
}

function businessWhere(b: CrossBusinessSide): string {
  return `${b.key} IS NOT NULL${b.where ? ` AND (${b.where})` : ''}`;
}

function businessRowsSql(b: CrossBusinessSide, semantics: KeySemantics): string {
  return `SELECT ${hashOrZero(b, semantics)} AS h, ${b.key} AS k FROM ${b.table} WHERE ${businessWhere(b)}`;
}

/** One segment's digest as a statement returns it: segment, rows, hash sum, tasks not done. */
export interface DigestRow {
  g: unknown;
  n: unknown;
  s: unknown;
  nd: unknown;
}

function levelSql(dialect: Dialect, inner: Fragment, level: LevelQuery, withRole: boolean): Fragment {
  const parents = restrictingParents(level);
  const filter = parents
    ? {
        sql: ` WHERE ${dialect.intDiv('h', '?')} IN (${placeholders(parents)})`,
        params: [level.parentWidth, ...parents],
      }
    : { sql: '', params: [] };
  const whole = level.width >= HASH_SPACE;
  const nd = withRole ? 'SUM(CASE WHEN r <> 1 THEN 1 ELSE 0 END)' : '0';
  const seg = whole ? '0' : dialect.intDiv('h', '?');
  return {
    sql: `SELECT ${seg} AS g, COUNT(*) AS n, MOD(SUM(h), ${HASH_SUM_MODULUS}) AS s, ${nd} AS nd FROM (${inner.sql}) x${filter.sql}${whole ? '' : ' GROUP BY g'}`,
    params: [...(whole ? [] : [level.width]), ...inner.params, ...filter.params],
  };
}

/**
 * Digests of the task side's segments at one level (a server that hashes).
 * In: task side, key semantics, level, hash kind, whether to count the tasks not done in SQL
 * (which reads every task row; without it only the (biz type, key) index, and `nd` is 0).
 * Out: one row per non-empty segment (segment, rows, hash sum mod 2^48, tasks not done).
 */
export async function taskDigests(
  q: Queryable,
  t: CrossTaskSide,
  semantics: KeySemantics,
  level: LevelQuery,
  options: { kind: HashKind; withRole: boolean },
): Promise<DigestRow[]> {
  const s = levelSql(
    t.dialect,
    taskHashesSql(t, semantics, options.kind, options.withRole),
    level,
    options.withRole,
  );
  return q.query<DigestRow>(s.sql, s.params);
}

/**
 * Digests of the business side's segments at one level (a server that hashes).
 * In: business side, key semantics, level, hash kind. Out: as taskDigests (nd = 0). Reads the
 * business key (its index when the rule has no `where`) once.
 */
export async function businessDigests(
  q: Queryable,
  b: CrossBusinessSide,
  semantics: KeySemantics,
  level: LevelQuery,
  kind: HashKind,
): Promise<DigestRow[]> {
  const s = levelSql(b.dialect, businessHashesSql(b, semantics, kind), level, false);
  return q.query<DigestRow>(s.sql, s.params);
}

function businessHashesSql(b: CrossBusinessSide, semantics: KeySemantics, kind: HashKind): Fragment {
  const hash = keyHashSql(b, semantics, kind);
  return { sql: `SELECT ${hash} AS h FROM ${b.table} WHERE ${businessWhere(b)}`, params: [] };
}

/**
 * A statement of hashes `h` as they go on the wire to a dense level: each as its bytes, big-endian
 * with no leading zero bytes (CHAR(h USING binary): 1–4 bytes, where its decimal text takes up to 10).
 */
function wireHashes(hashes: Fragment): Fragment {
  return { sql: `SELECT CHAR(h USING binary) AS h FROM (${hashes.sql}) x`, params: hashes.params };
}

/**
 * The statement that streams the normal-form hashes of the task side's keys, one column `h` as
 * bytes (see wireHashes), for a level the client aggregates (core/dense-digests.ts). Reads the
 * (biz type, key) index only.
 */
export function taskHashStream(t: CrossTaskSide, semantics: KeySemantics): Fragment {
  return wireHashes(taskHashesSql(t, semantics, 'normal', false));
}

/**
 * As taskHashStream, for the business key (its index). Only for a rule without a `where`: a
 * stream runs outside the read-only transaction, so operator SQL never goes into one.
 */
export function businessHashStream(b: CrossBusinessSide, semantics: KeySemantics): Fragment {
  if (b.where) throw new Error("a business side with a 'where' is not streamed");
  return wireHashes(businessHashesSql(b, semantics, 'normal'));
}

/**
 * How many of the rule's tasks with a key meet `where`: the tasks not done (`t.notDone`, through
 * the status index where there is one) or those in the window (`t.window`, tasksChecked).
 * In: task side, predicate. Out: a count.
 */
export async function countTasks(q: Queryable, t: CrossTaskSide, where: Fragment): Promise<number> {
  const rows = await q.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key} IS NOT NULL AND (${where.sql})`,
    [t.bizTypeValue, ...where.params],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * The normal-form hashes of the rule's tasks that are not done (a server that hashes), so digests can
 * be read from the key index alone and the segments holding such a task marked in the client.
 * In: task side, semantics. Out: rows `{h}`, streamed. Reads the status index where there is one.
 */
export function notDoneHashes(db: Db, t: CrossTaskSide, semantics: KeySemantics): AsyncIterable<unknown> {
  return db.stream(
    `SELECT ${hashSql(t, semantics)} AS h FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key} IS NOT NULL AND (${t.notDone.sql})`,
    [t.bizTypeValue, ...t.notDone.params],
  );
}

export interface CrossTaskRow {
  h: unknown;
  r: unknown;
  w: unknown;
  id: unknown;
  k: unknown;
  e: unknown;
  s: unknown;
}

/**
 * The tasks of some segments, row by row, from a server that hashes, or every task with
 * a key from SQLite (`segments` ignored; the client hashes and filters).
 * In: task side, semantics, segments. Out: rows (hash, role, in window, id, key, event id, raw
 * status), streamed.
 * Reads the rule's tasks once.
 */
export async function taskRows(
  db: Db,
  t: CrossTaskSide,
  semantics: KeySemantics,
  segments?: { width: number; ids: readonly number[] },
): Promise<AsyncIterable<unknown>> {
  if (!segments || !hashesInSql(t.dialect)) {
    const all = taskRowsSql(t, semantics);
    return db.stream(all.sql, all.params);
  }
  // No operator-authored SQL on the task side: stream it, in constant memory.
  const s = segmentTasksSql(t, semantics, segments);
  return db.stream(s.sql, s.params);
}

/**
 * The rows of the tasks whose key hashes into `segments`: their ids found in the (biz type, key)
 * index, and only those rows read — not every task row, as filtering taskRowsSql would.
 */
function segmentTasksSql(
  t: CrossTaskSide,
  semantics: KeySemantics,
  segments: { width: number; ids: readonly number[] },
): Fragment {
  const hash = hashSql(t, semantics);
  const ids =
    `SELECT ${t.id} AS taskrecon_segment_id FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key} IS NOT NULL ` +
    `AND ${t.dialect.intDiv(hash, '?')} IN (${placeholders(segments.ids)})`;
  return {
    sql:
      `SELECT ${hash} AS h, ${t.role.sql} AS r, ${t.inWindow.sql} AS w, ${t.id} AS id, ${t.key} AS k, ` +
      `${t.eventId ?? 'NULL'} AS e, ${t.rawStatus} AS s FROM ${t.table} ` +
      `JOIN (${ids}) segment_ids ON ${t.id} = segment_ids.taskrecon_segment_id`,
    params: [...t.role.params, ...t.inWindow.params, t.bizTypeValue, segments.width, ...segments.ids],
  };
}

export interface CrossBusinessRow {
  h: unknown;
  k: unknown;
}

/**
 * The business keys of some segments (a server that hashes), or every non-NULL key (SQLite: the client
 * hashes). In: business side, semantics, segments. Out: rows (hash, key), as taskRows.
 * Reads the business table once.
 */
export async function businessRows(
  db: Db,
  q: Queryable,
  b: CrossBusinessSide,
  semantics: KeySemantics,
  segments?: { width: number; ids: readonly number[] },
): Promise<Iterable<unknown> | AsyncIterable<unknown>> {
  const inner = businessRowsSql(b, semantics);
  if (!segments || !hashesInSql(b.dialect)) return db.stream(inner);
  const sql = `SELECT * FROM (${inner}) x WHERE ${b.dialect.intDiv('h', '?')} IN (${placeholders(segments.ids)})`;
  // A rule's `where` runs only inside the read-only transaction, one bounded batch at a time; without one, stream.
  if (!b.where) return db.stream(sql, [segments.width, ...segments.ids]);
  return q.query(sql, [segments.width, ...segments.ids]);
}

/** The task side as nullKeyTasks reads it: the same-server merge walk has it too. */
export type NullKeyTaskSide = Pick<
  CrossTaskSide,
  'table' | 'id' | 'key' | 'eventId' | 'bizType' | 'bizTypeValue' | 'rawStatus' | 'role' | 'inWindow'
>;

export interface NullKeyTaskRow {
  id: unknown;
  e: unknown;
  s: unknown;
  r: unknown;
  w: unknown;
}

/**
 * The rule's tasks whose key is NULL (a done one is missing: no row can match NULL).
 * In: task side. Out: rows (id, event id, raw status, role, in window). Reads the (biz type, key) index.
 */
export async function nullKeyTasks(q: Queryable, t: NullKeyTaskSide): Promise<NullKeyTaskRow[]> {
  return q.query<NullKeyTaskRow>(
    `SELECT ${t.id} AS id, ${t.eventId ?? 'NULL'} AS e, ${t.rawStatus} AS s, ${t.role.sql} AS r, ${t.inWindow.sql} AS w
       FROM ${t.table} WHERE ${t.bizType} = ? AND ${t.key} IS NULL`,
    [...t.role.params, ...t.inWindow.params, t.bizTypeValue],
  );
}
