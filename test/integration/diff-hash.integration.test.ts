import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyHash, normalizeKey, semanticsOfCollation, BINARY_KEYS } from '../../src/core/diff-keys.js';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { hashSql, utf8Collation, type HashedKey } from '../../src/db/sql/diff-checksum.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

/**
 * A cross-server diff places a key in a segment by the hash MariaDB computes of its normal form
 * on one side and the client computes (keyHash) on the other: the two must agree for every column
 * kind, whatever bytes the column stores — UTF-8 as it is, latin1 converted first.
 */
let db: TestSchema;

const COLUMNS = [
  { name: 'k_utf8_ci', type: 'VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci' },
  { name: 'k_utf8_bin', type: 'VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin' },
  { name: 'k_utf8mb3', type: 'VARCHAR(64) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci' },
  { name: 'k_latin1', type: 'VARCHAR(64) CHARACTER SET latin1 COLLATE latin1_swedish_ci' },
  { name: 'k_nopad', type: 'VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin' },
];
const KEYS = ['order-1', 'Café ', 'ÄBC', 'straße', 'x  ', '42'];

beforeAll(async () => {
  db = await createTestSchema('diff_hash');
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
});

async function serverHashes(column: HashedKey, semantics: typeof BINARY_KEYS): Promise<number[]> {
  const [rows] = await db.sql.query(`SELECT ${hashSql(column, semantics)} AS h FROM k ORDER BY id`);
  return (rows as Array<{ h: unknown }>).map((r) => Number(r.h));
}

describe('the normal-form key hash', () => {
  it.each(COLUMNS.map((c) => [c.name, c.type.replace(/.*COLLATE /, '')]))(
    'is the same in MariaDB and in the client for %s (%s)',
    async (name, collation) => {
      const semantics = semanticsOfCollation(collation);
      const column = {
        dialect: mysqlDialect,
        key: name,
        keyIsInt: false,
        keyIsUtf8: utf8Collation(collation),
      };
      const client = KEYS.map((key) => keyHash(normalizeKey(key, semantics) as string));
      expect(await serverHashes(column, semantics)).toEqual(client);
    },
  );

  it('is the same for an integer key, hashed as its decimal text', async () => {
    const column = { dialect: mysqlDialect, key: 'k_int', keyIsInt: true, keyIsUtf8: false };
    const client = KEYS.map((_, i) => keyHash(String(i * 1000 - 7)));
    expect(await serverHashes(column, BINARY_KEYS)).toEqual(client);
  });

  it('differs for latin1 bytes hashed without their conversion (why the conversion stays)', async () => {
    const semantics = semanticsOfCollation('latin1_swedish_ci');
    const unconverted = { dialect: mysqlDialect, key: 'k_latin1', keyIsInt: false, keyIsUtf8: true };
    const client = KEYS.map((key) => keyHash(normalizeKey(key, semantics) as string));
    expect(await serverHashes(unconverted, semantics)).not.toEqual(client);
  });
});
