import pg, { type Client } from 'pg';
import { randomBytes } from 'node:crypto';

/** The server the PostgreSQL integration tests use: its user may create and drop databases. */
export const TEST_PG_SERVER = process.env.TASKRECON_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const START_HINT =
  'Start PostgreSQL with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` ' +
  '(or point TASKRECON_TEST_PG at a server whose user may CREATE DATABASE).';

export interface PgTestDatabase {
  /** The throw-away database's name. */
  name: string;
  /** DSN of the throw-away database, for --db. */
  dsn: string;
  /** An admin connection to it, for seeding and ground truth (session TimeZone UTC unless given). */
  sql: Client;
  /** Rows of a statement with `$n` parameters. */
  rows<T = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

async function connected(dsn: string): Promise<Client> {
  const client = new pg.Client({ connectionString: dsn });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is unreachable at ${TEST_PG_SERVER}: ${(error as Error).message}. ${START_HINT}`,
      {
        cause: error,
      },
    );
  }
  return client;
}

/**
 * One throw-away database per test file (`tr_<prefix>_<random>`), dropped in afterAll. Fails,
 * never skips, when the server is not running. `timeZone` pins the seeding session's TimeZone.
 */
export async function createPgDatabase(
  prefix: string,
  options: { timeZone?: string } = {},
): Promise<PgTestDatabase> {
  const name = `tr_${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(3).toString('hex')}`;
  const admin = await connected(TEST_PG_SERVER);
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_PG_SERVER);
  url.pathname = `/${name}`;
  const dsn = url.toString();
  const sql = await connected(dsn);
  const zone = options.timeZone ?? 'UTC';
  // An ISO offset is set as an interval: PostgreSQL reads a bare `+08:00` as a POSIX zone, 8 hours
  // the other way.
  if (/^[+-]\d{2}:\d{2}$/.test(zone)) await sql.query(`SET TIME ZONE INTERVAL '${zone}' HOUR TO MINUTE`);
  else await sql.query(`SELECT set_config('TimeZone', $1, false)`, [zone]);
  return {
    name,
    dsn,
    sql,
    async rows<T>(text: string, values: unknown[] = []) {
      return (await sql.query<T>(text, values)).rows;
    },
    async drop() {
      await sql.end();
      const again = await connected(TEST_PG_SERVER);
      try {
        await again.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await again.end();
      }
    },
  };
}
