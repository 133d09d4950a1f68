import mysql from 'mysql2/promise';
import { randomBytes } from 'node:crypto';

/** The server the integration tests use: root may create and drop databases there. */
export const TEST_SERVER = process.env.TASKRECON_TEST_DB ?? 'mysql://root@127.0.0.1:3306/test';

export interface TestSchema {
  /** The throw-away database's name. */
  name: string;
  /** DSN of the throw-away database, for --db. */
  dsn: string;
  /** An admin connection to it, for seeding and ground truth. Session zone as given. */
  sql: mysql.Connection;
  drop(): Promise<void>;
}

/**
 * One throw-away schema per test file. `timeZone` pins the seeding session's zone, so a
 * test can write DATETIMEs as an app in Asia/Shanghai would.
 */
export async function createTestSchema(
  prefix: string,
  options: { timeZone?: string } = {},
): Promise<TestSchema> {
  const name = `tr_${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(3).toString('hex')}`;
  const server = new URL(TEST_SERVER);
  const admin = await mysql.createConnection({ uri: TEST_SERVER, multipleStatements: true });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  await admin.end();
  server.pathname = `/${name}`;
  const dsn = server.toString();
  const sql = await mysql.createConnection({
    uri: dsn,
    multipleStatements: true,
    dateStrings: true,
    supportBigNumbers: true,
  });
  if (options.timeZone) await sql.query('SET time_zone = ?', [options.timeZone]);
  return {
    name,
    dsn,
    sql,
    async drop() {
      await sql.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await sql.end();
    },
  };
}
