import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keyHash,
  normalizeKey,
  semanticsOfCollation,
  BINARY_KEYS,
  KEY_HASH_FUNCTIONS,
  type KeyHashFunction,
  type KeySemantics,
} from '../../src/core/diff-keys.js';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { postgresDialect } from '../../src/db/engines/postgres/dialect.js';
import { hashSql, utf8Collation, type HashedKey } from '../../src/db/sql/diff-checksum.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

/**
 * A cross-server diff places a key in a segment by the hash a server computes of its normal form
 * on one side and the client (keyHash) or another server computes on the other: they must agree
 * for every column kind, whatever bytes the column stores — UTF-8 as it is, latin1 converted
 * first — for each hash: CRC32 and MD5 on MariaDB, MD5 on PostgreSQL.
 */
let db: TestSchema;
let pgDb: PgTestDatabase;

const COLUMNS = [
  { name: 'k_utf8_ci', type: 'VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci' },
  { name: 'k_utf8_bin', type: 'VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin' },
  { name: 'k_utf8mb3', type: 'VARCHAR(64) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci' },
  { name: 'k_latin1', type: 'VARCHAR(64) CHARACTER SET latin1 COLLATE latin1_swedish_ci' },
  { name: 'k_nopad', type: 'VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin' },
];
const KEYS = ['order-1', 'Café ', 'ÄBC', 'straße', 'x  ', '42'];

beforeAll(async () => {
  [db, pgDb] = await Promise.all([createTestSchema('diff_hash'), createPgDatabase('diff_hash')]);
  await pgDb.sql.query(
    `CREATE TABLE k (id int PRIMARY KEY, k_text text, k_c varchar(64) COLLATE "C", k_int bigint)`,
  );
  for (const [i, key] of KEYS.entries()) {
    await pgDb.sql.query('INSERT INTO k VALUES ($1, $2, $3, $4)', [i, key, key, i * 1000 - 7]);
  }
  await db.sql.query(
    `CREATE TABLE k (id INT PRIMARY KEY, ${COLUMNS.map((c) => `${c.name} ${c.type}`).join(', ')}, k_int BIGINT)`,
  );
  for (const [i, key] of KEYS.entries()) {
    await db.sql.query(`INSERT INTO k VALUES (?, ${COLUMNS.map(() => '?').join(', ')}, ?)`, [
      i,
      ...COLUMNS.map(() => key),
      i * 1000 - 7,
    ]);
  }
});

afterAll(async () => {
  await db?.drop();
  await pgDb?.drop();
});

async function serverHashes(column: HashedKey, semantics: KeySemantics): Promise<number[]> {
  const sql = `SELECT ${hashSql(column, semantics)} AS h FROM k ORDER BY id`;
  const rows =
    column.dialect === postgresDialect ? (await pgDb.sql.query(sql)).rows : (await db.sql.query(sql))[0];
  return (rows as Array<{ h: unknown }>).map((r) => Number(r.h));
}

describe.each(KEY_HASH_FUNCTIONS)('the normal-form key hash %s on MariaDB', (hash: KeyHashFunction) => {
  it.each(COLUMNS.map((c) => [c.name, c.type.replace(/.*COLLATE /, '')]))(
    'is the same in MariaDB and in the client for %s (%s)',
    async (name, collation) => {
      const semantics = semanticsOfCollation(collation);
      const column = {
        dialect: mysqlDialect,
        key: name,
        keyIsInt: false,
        keyIsUtf8: utf8Collation(collation),
        hash,
      };
      const client = KEYS.map((key) => keyHash(normalizeKey(key, semantics) as string, hash));
      expect(await serverHashes(column, semantics)).toEqual(client);
    },
  );

  it('is the same for an integer key, hashed as its decimal text', async () => {
    const column = { dialect: mysqlDialect, key: 'k_int', keyIsInt: true, keyIsUtf8: false, hash };
    const client = KEYS.map((_, i) => keyHash(String(i * 1000 - 7), hash));
    expect(await serverHashes(column, BINARY_KEYS)).toEqual(client);
  });

  it('differs for latin1 bytes hashed without their conversion (why the conversion stays)', async () => {
    const semantics = semanticsOfCollation('latin1_swedish_ci');
    const unconverted = { dialect: mysqlDialect, key: 'k_latin1', keyIsInt: false, keyIsUtf8: true, hash };
    const client = KEYS.map((key) => keyHash(normalizeKey(key, semantics) as string, hash));
    expect(await serverHashes(unconverted, semantics)).not.toEqual(client);
  });
});

describe('the normal-form key hash on PostgreSQL (md5)', () => {
  const SEMANTICS: Array<[string, KeySemantics]> = [
    ['byte-wise', BINARY_KEYS],
    ['PAD SPACE', semanticsOfCollation('utf8mb4_bin')],
    ['case-insensitive PAD SPACE', semanticsOfCollation('utf8mb4_general_ci')],
  ];
  it.each(
    SEMANTICS.flatMap(([label, semantics]) => [
      ['k_text', label, semantics],
      ['k_c', label, semantics],
    ]) as Array<[string, string, KeySemantics]>,
  )(
    'is the same in PostgreSQL, in MariaDB and in the client for %s compared %s',
    async (name, _label, semantics) => {
      const pgColumn = {
        dialect: postgresDialect,
        key: name,
        keyIsInt: false,
        keyIsUtf8: false,
        hash: 'md5' as const,
      };
      const mariaColumn = {
        dialect: mysqlDialect,
        key: 'k_utf8_bin',
        keyIsInt: false,
        keyIsUtf8: true,
        hash: 'md5' as const,
      };
      const client = KEYS.map((key) => keyHash(normalizeKey(key, semantics) as string, 'md5'));
      expect(await serverHashes(pgColumn, semantics)).toEqual(client);
      expect(await serverHashes(mariaColumn, semantics)).toEqual(client);
    },
  );

  it('is the same for an integer key, hashed as its decimal text', async () => {
    const column = {
      dialect: postgresDialect,
      key: 'k_int',
      keyIsInt: true,
      keyIsUtf8: false,
      hash: 'md5' as const,
    };
    const client = KEYS.map((_, i) => keyHash(String(i * 1000 - 7), 'md5'));
    expect(await serverHashes(column, BINARY_KEYS)).toEqual(client);
  });

  it('differs from the CRC32 of the same keys (both sides must use one function), and PostgreSQL refuses CRC32', async () => {
    const column = {
      dialect: postgresDialect,
      key: 'k_text',
      keyIsInt: false,
      keyIsUtf8: false,
      hash: 'md5' as const,
    };
    const crc = KEYS.map((key) => keyHash(key, 'crc32'));
    expect(await serverHashes(column, BINARY_KEYS)).not.toEqual(crc);
    expect(() => hashSql({ ...column, hash: 'crc32' }, BINARY_KEYS)).toThrow(/crc32/);
  });
});
