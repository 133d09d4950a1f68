import type { Dialect } from '../dialect.js';
import type { Fragment } from '../fragment.js';
import type { Db, Queryable } from '../types.js';
import { BK, businessDerived, keyRange, type BusinessSide, type TaskSide } from './diff.js';

/**
 * The statements of the merge walk (same server, keys of one kind on both sides): each side's
 * keys of a key range, in the order of their weights (see Dialect.mergeKeys: collation weights on
 * MariaDB/MySQL, bytes on PostgreSQL), with those weights — read from the key indexes only, with
 * no lookup into the other table. Which keys match is decided in the client by comparing
 * weights; what looks like a finding is then checked by the join statements of diff.ts.
 */

/**
 * The business rows of keys in (after, upTo] (open ends when undefined) in weight order: weight
 * `w` and key `k`. Reads the business key index.
 */
export function businessWeights(dialect: Dialect, b: BusinessSide, after: unknown, upTo: unknown): Fragment {
  const range = keyRange(`b.${BK}`, after, upTo);
  const [weight, order] = [
    dialect.mergeWeight(`b.${BK}`, b.keyIsInt),
    dialect.mergeOrder(`b.${BK}`, b.keyIsInt),
  ];
  return {
    sql: `SELECT ${weight} AS w, b.${BK} AS k FROM ${businessDerived(b)} b WHERE ${range.sql} ORDER BY ${order}`,
    params: range.params,
  };
}

/**
 * The rule's tasks (any status, any time) with keys in (after, upTo], in weight order: weight `w`
 * and id. Reads the (biz type, key) index.
 */
export function taskWeights(t: TaskSide, after: unknown, upTo: unknown): Fragment {
  const range = keyRange(t.key.sql, after, upTo);
  const weight = t.dialect.mergeWeight(t.key.sql, t.key.isInt);
  return {
    sql: `SELECT ${weight} AS w, ${t.id} AS id FROM ${t.table} WHERE ${t.bizType} = ? AND ${range.sql} ORDER BY ${t.dialect.mergeOrder(t.key.sql, t.key.isInt)}`,
    params: [t.bizTypeValue, ...range.params],
  };
}

/**
 * The weight of one space under `collation` (its character set is the name's first word), which
 * a PAD SPACE collation ignores at the end of a key.
 */
export async function spaceWeight(db: Db, collation: string): Promise<Buffer> {
  if (!/^[a-z0-9]+_[a-z0-9_]+$/i.test(collation)) throw new Error(`unexpected collation name '${collation}'`);
  const charset = collation.slice(0, collation.indexOf('_'));
  const rows = await db.query<{ w: unknown }>(
    `SELECT WEIGHT_STRING(CONVERT(' ' USING ${charset}) COLLATE ${collation}) AS w`,
  );
  const w = rows[0]?.w;
  return Buffer.isBuffer(w) ? w : Buffer.from(String(w ?? ''), 'latin1');
}

/** How many keys a side has in a range, and two sums of their hashes (as the server wrote them). */
export interface RangeDigest {
  n: string;
  s: string;
  x: string;
}

async function digest(q: Queryable, sql: string, params: unknown[]): Promise<RangeDigest> {
  const row = (await q.query<Record<string, unknown>>(sql, params))[0] ?? {};
  return { n: String(row.n ?? 0), s: String(row.s ?? 0), x: String(row.x ?? 0) };
}

/** The range digest's select list of a key: its bytes as stored (an integer as its decimal text). */
function keyDigest(dialect: Dialect, key: string, isInt: boolean): string {
  return dialect.keyRangeDigest(isInt ? dialect.castText(key) : key);
}

/**
 * The digest of the rule's tasks (any status, any time) with keys in (after, upTo]: the key
 * bytes as stored. Reads the (biz type, key) index only.
 */
export function taskRangeDigest(
  q: Queryable,
  t: TaskSide,
  after: unknown,
  upTo: unknown,
): Promise<RangeDigest> {
  const range = keyRange(t.key.sql, after, upTo);
  return digest(
    q,
    `SELECT ${keyDigest(t.dialect, t.key.sql, t.key.isInt)} FROM ${t.table} WHERE ${t.bizType} = ? AND ${range.sql}`,
    [t.bizTypeValue, ...range.params],
  );
}

/** The digest of the business rows with keys in (after, upTo]. Reads the business key index only. */
export function businessRangeDigest(
  q: Queryable,
  dialect: Dialect,
  b: BusinessSide,
  after: unknown,
  upTo: unknown,
): Promise<RangeDigest> {
  const range = keyRange(`b.${BK}`, after, upTo);
  return digest(
    q,
    `SELECT ${keyDigest(dialect, `b.${BK}`, b.keyIsInt)} FROM ${businessDerived(b)} b WHERE ${range.sql}`,
    range.params,
  );
}
