import { checkedPath, type Dialect } from '../../dialect.js';
import { postgresDdl, quotePostgresId } from './ddl.js';

/** A simple JSON path (`$.a.b`, `$.a[0]`) as a PostgreSQL text-array path (`{a,b}`, `{a,0}`). */
function pathArray(path: string): string {
  const keys = checkedPath(path)
    .replace(/^\$\.?/, '')
    .split(/\.|\[(\d+)\]/)
    .filter((k): k is string => k !== undefined && k !== '');
  return `'{${keys.map((k) => `"${k}"`).join(',')}}'`;
}

/** The smallest bigint, whose XOR flips an integer's sign bit. */
const INT8_SIGN = '(-9223372036854775807 - 1)';

/** The first 8 hex digits of a hex text (md5's) as an unsigned 32-bit integer. */
const first32Bits = (hex: string): string => `CAST(CAST('x' || substr(${hex}, 1, 8) AS bit(32)) AS BIGINT)`;

/** Whole epoch seconds of an instant (truncated, as MySQL's second-precision columns hold them). */
const epochSeconds = (instant: string): string => `FLOOR(EXTRACT(EPOCH FROM ${instant}))::bigint`;

/**
 * PostgreSQL's SQL text: double quotes (schema-qualified tables), EXTRACT(EPOCH …)/to_timestamp,
 * jsonb paths, ON CONFLICT DO NOTHING, md5 key hashes, keys merged byte-wise.
 *
 * Time types, as `columns()` reports them: `timestamptz` is an instant (`timestamp`, like MySQL's
 * TIMESTAMP); `timestamp` without time zone is a wall-clock time (`datetime`, like MySQL's
 * DATETIME), read and written in the session's TimeZone, which the connection pins to
 * `appTimeZone` (else the server's). "Now" is the statement's start, as MySQL's NOW().
 */
export const postgresDialect: Dialect = {
  quoteId: quotePostgresId,
  epochOf: (col, type) =>
    type === 'unix' ? col : type === 'timestamp' ? epochSeconds(col) : epochSeconds(`${col}::timestamptz`),
  exactEpochOf: (col, type) =>
    type === 'unix'
      ? col
      : `EXTRACT(EPOCH FROM ${type === 'timestamp' ? col : `${col}::timestamptz`})::float8`,
  epochParam: (type) =>
    type === 'unix' ? '?' : type === 'timestamp' ? 'to_timestamp(?)' : 'to_timestamp(?)::timestamp',
  // Whole seconds, as MySQL's NOW() into a DATETIME: a row written now is due at a cutoff of now,
  // which is bound in whole epoch seconds.
  // The column's own text (ISO: the connection pins DateStyle, and timestamptz text carries its
  // offset), cast back to the column's type: microseconds exact, no float, no time zone rule in
  // between. The epoch read beside it is whole seconds (epochSeconds) and cannot continue a page.
  pageKeyOf: (col, type) => (type === 'unix' ? col : `CAST(${col} AS TEXT)`),
  pageKeyParam: (type) =>
    type === 'unix' ? '?' : type === 'timestamp' ? 'CAST(? AS TIMESTAMPTZ)' : 'CAST(? AS TIMESTAMP)',
  pageKeyForm: (type) => (type === 'unix' ? 'integer' : 'time'),
  nowOf: (type) =>
    type === 'unix'
      ? epochSeconds('statement_timestamp()')
      : type === 'timestamp'
        ? "date_trunc('second', statement_timestamp())"
        : "date_trunc('second', statement_timestamp()::timestamp)",
  nowEpoch: epochSeconds('statement_timestamp()'),
  // Failed-job payloads are text that may hold anything. PostgreSQL 13–15 has no "is valid JSON"
  // test, so the CASE casts only text shaped like a JSON object (`{…}`): other text reads as NULL;
  // text that looks like an object yet is malformed still fails the cast. #>> gives a JSON null as
  // SQL NULL, as the other engines read it.
  jsonText: (col, path) =>
    `CASE WHEN ${col}::text ~ '^\\s*\\{.*\\}\\s*$' THEN (${col}::text)::jsonb #>> ${pathArray(path)} END`,
  prefix: (col, length) => `left(${col}, ${Math.trunc(length)})`,
  explain: 'EXPLAIN (FORMAT JSON)',
  forUpdate: ' FOR UPDATE',
  // PostgreSQL has no join-order hint: a plain join, whose plan for a primary-key chunk of the left
  // table is the nested loop into the other table's index anyway (the chunk is small and bounded).
  drivingJoin: 'JOIN',
  indexesEndWithPrimaryKey: false,
  indexNamesPerTable: false,
  // Keys compare byte-wise (a deterministic collation's equality): text is read in COLLATE "C"
  // order with its UTF-8 bytes as the weight; an integer's weight is its big-endian bytes with the
  // sign bit flipped, so the bytes order as the numbers do.
  mergeKeys: 'bytes',
  mergeWeight: (key, isInt) =>
    isInt ? `int8send(CAST(${key} AS BIGINT) # ${INT8_SIGN})` : `convert_to(${key}, 'UTF8')`,
  mergeOrder: (key, isInt) => (isInt ? key : `${key} COLLATE "C"`),
  // PostgreSQL has md5() (crc32() only from 18): the first 4 bytes of the digest as an unsigned integer.
  keyHashes: ['md5'],
  keyHashSql: (fn, text, utf8) => {
    if (fn !== 'md5') throw new Error(`PostgreSQL does not compute ${fn} in SQL`);
    return first32Bits(`md5(${utf8 ? text : `convert_to(${text}, 'UTF8')`})`);
  },
  // lower() follows the expression's collation, and "C" folds ASCII only: ICU's root locale folds
  // every script (PostgreSQL built with ICU, as the usual packages are).
  lowerCase: (text) => `lower(${text} COLLATE "und-x-icu")`,
  // Integers divide as integers ('/' of two bigints truncates).
  intDiv: (a, b) => `(${a} / ${b})`,
  // The merge walk compares a range's digests on one server only: two sums of PostgreSQL's own
  // 64-bit text hash under two seeds (no other server computes them), in numeric, read as exact text.
  keyRangeDigest: (text) =>
    `COUNT(*) AS n, CAST(COALESCE(SUM(hashtextextended(${text}, 0)), 0) AS TEXT) AS s, ` +
    `CAST(COALESCE(SUM(hashtextextended(${text}, 1)), 0) AS TEXT) AS x`,
  parallelReads: true,
  // Deadlock detected, lock not available (NOWAIT / lock_timeout), serialization failure.
  lockConflictCodes: ['40P01', '55P03', '40001'],
  castText: (sql) => `CAST(${sql} AS TEXT)`,
  // A text key that is not an integer's text is NULL (it matches no integer), never a failed
  // statement: MySQL and SQLite read it as 0, which the text comparison beside it then refuses.
  castInt: (sql) => `CASE WHEN ${sql} ~ '^-?[0-9]{1,18}$' THEN CAST(${sql} AS BIGINT) END`,
  insertIgnore: 'INSERT',
  textLike: 'ILIKE',
  insertUnlessConflict: { verb: 'INSERT INTO', suffix: ' ON CONFLICT DO NOTHING' },
  // The audit log stores timestamptz(3).
  auditEpoch: (col) => `EXTRACT(EPOCH FROM ${col})`,
  auditEpochParam: 'to_timestamp(?)',
  ddl: postgresDdl,
  addUniqueKey: (table, name, column) =>
    `ALTER TABLE ${quotePostgresId(table)} ADD CONSTRAINT ${quotePostgresId(name)} UNIQUE (${quotePostgresId(column)});`,
  modifyColumn: (table, column, definition) =>
    `ALTER TABLE ${quotePostgresId(table)} ALTER COLUMN ${quotePostgresId(column)} TYPE ${definition};`,
};
