import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * How two keys compare when the task table and the business table are on different servers,
 * where no SQL join can decide it. Both sides reduce a key to a normal form by the same rule —
 * the business key column's collation — and compare (and checksum) that:
 * - integers become their decimal text (so a varchar '42' matches 42, and '042' does not);
 * - a case-insensitive collation (`*_ci`) folds case (simple lower-casing);
 * - a PAD SPACE collation (MariaDB's default; not `*_nopad_*`) ignores trailing spaces.
 * NULL never matches anything, as in SQL.
 */
export interface KeySemantics {
  caseInsensitive: boolean;
  padSpace: boolean;
}

export const BINARY_KEYS: KeySemantics = { caseInsensitive: false, padSpace: false };

/** The semantics of a collation name (MariaDB/MySQL); SQLite's BINARY is `undefined` → exact. */
export function semanticsOfCollation(collation: string | null | undefined): KeySemantics {
  if (!collation) return BINARY_KEYS;
  const c = collation.toLowerCase();
  return {
    caseInsensitive: /_ci$|_ai_ci$/.test(c) || c === 'nocase',
    // MySQL 8's utf8mb4_0900_* collations are NO PAD; MariaDB's *_nopad_* too.
    padSpace: !/nopad|_0900_/.test(c) && c !== 'binary',
  };
}

export function normalizeKey(value: unknown, semantics: KeySemantics): string | null {
  if (value === null || value === undefined) return null;
  let text = Buffer.isBuffer(value)
    ? value.toString('utf8')
    : typeof value === 'bigint'
      ? value.toString()
      : String(value);
  if (semantics.padSpace) text = text.replace(/ +$/, '');
  if (semantics.caseInsensitive) text = text.toLowerCase();
  return text;
}

/**
 * The 32-bit hashes both sides of a cross-server diff can compute alike: `crc32` (MariaDB/MySQL's
 * CRC32(), the fastest) and `md5` (the first 4 bytes of MD5 as an unsigned big-endian integer,
 * which PostgreSQL computes too). Both sides of a diff use one, chosen by the servers it joins.
 */
export const KEY_HASH_FUNCTIONS = ['crc32', 'md5'] as const;
export type KeyHashFunction = (typeof KEY_HASH_FUNCTIONS)[number];

/** The 32-bit hash of a normal-form key's UTF-8 bytes, as the server computes it (CRC32() or MD5's first 4 bytes). */
export function keyHash(normalized: string, fn: KeyHashFunction = 'crc32'): number {
  const bytes = Buffer.from(normalized, 'utf8');
  return fn === 'crc32' ? crc32(bytes) : createHash('md5').update(bytes).digest().readUInt32BE(0);
}

/**
 * The hash both sides compute: the first of KEY_HASH_FUNCTIONS that every side hashing in SQL has
 * (a side hashing in the client has them all). Undefined when none is common.
 */
export function commonKeyHash(
  ...sides: ReadonlyArray<readonly KeyHashFunction[] | 'client'>
): KeyHashFunction | undefined {
  return KEY_HASH_FUNCTIONS.find((fn) => sides.every((s) => s === 'client' || s.includes(fn)));
}

/** The hash space (32-bit hash values) is split into segments; a segment is [lo, hi). */
export const HASH_SPACE = 2 ** 32;

/**
 * What one side says about one segment: how many keys it holds, the sum of their hashes
 * (mod 2^48, exact in a double) and, on the task side, how many tasks are open or in flight.
 */
export interface SegmentDigest {
  rows: number;
  hashSum: number;
  /** Task side only: tasks not in a done status (any of them may be a finding). */
  notDone: number;
}

export const HASH_SUM_MODULUS = 2 ** 48;

export function emptyDigest(): SegmentDigest {
  return { rows: 0, hashSum: 0, notDone: 0 };
}

/**
 * A segment needs no row-level look when both sides hold the same multiset of keys and every
 * task in it is done: then every task's key has exactly as many rows as tasks share it, which
 * `classifyTask` never reports, and no business key lacks a task.
 */
export function segmentConsistent(tasks: SegmentDigest, business: SegmentDigest): boolean {
  return tasks.rows === business.rows && tasks.hashSum === business.hashSum && tasks.notDone === 0;
}

/**
 * How to split a mismatching segment of `rows` rows: into children of about `leafRows` rows,
 * at most `maxFanout` of them. Returns the width of a child in hash values (≥ 1).
 */
export function childWidth(parentWidth: number, rows: number, leafRows: number, maxFanout: number): number {
  const children = Math.min(maxFanout, Math.max(2, Math.ceil(rows / leafRows)));
  return Math.max(1, Math.ceil(parentWidth / children));
}
