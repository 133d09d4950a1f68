import pg from 'pg';
import { mysqlDdl, quoteMysqlId } from '../../src/db/engines/mysql/ddl.js';
import { postgresDdl, quotePostgresId } from '../../src/db/engines/postgres/ddl.js';
import type { MariadbEndpoint } from './mariadb-servers.js';
import { TEST_PG_SERVER } from './postgres.js';

/** A PostgreSQL server holding shards (one database per layout database), reached as its test user. */
export interface PgEndpoint {
  engine: 'postgres';
  host: string;
  port: number;
  /** DSN of `database` on this server, for `db:` in a config or --db. */
  dsn(database: string): string;
}

/** A server holding shards: MariaDB (the machine's or a throw-away one) or PostgreSQL. */
export type ShardServer = MariadbEndpoint | PgEndpoint;

/** The machine's PostgreSQL (TASKRECON_TEST_PG, else postgres@127.0.0.1:5432) as a shard server. */
export function machinePostgres(): PgEndpoint {
  const url = new URL(TEST_PG_SERVER);
  return {
    engine: 'postgres',
    host: url.hostname,
    port: Number(url.port || 5432),
    dsn(database) {
      const u = new URL(TEST_PG_SERVER);
      u.pathname = `/${database}`;
      return u.toString();
    },
  };
}

/** One connection to one database of a shard server, rows as plain objects. */
export interface ShardDb {
  engine: 'mysql' | 'postgres';
  query<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  end(): Promise<void>;
}

const PG_HINT =
  'Start PostgreSQL with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`.';

/** Connects to `database` on `server` (the server's own default database when undefined). */
export async function openShardDb(server: ShardServer, database?: string): Promise<ShardDb> {
  if (server.engine === 'postgres') {
    const client = new pg.Client({
      connectionString: database ? server.dsn(database) : TEST_PG_SERVER,
    });
    try {
      await client.connect();
    } catch (error) {
      throw new Error(
        `PostgreSQL is unreachable at ${server.host}:${server.port}: ${(error as Error).message}. ${PG_HINT}`,
        { cause: error },
      );
    }
    return {
      engine: 'postgres',
      query: async <T>(sql: string) => (await client.query(sql)).rows as T[],
      end: () => client.end(),
    };
  }
  const conn = await server.connect(database);
  return {
    engine: 'mysql',
    query: async <T>(sql: string) => {
      const [rows] = await conn.query(sql);
      return (Array.isArray(rows) ? rows : []) as T[];
    },
    end: () => conn.end(),
  };
}

/** The engine's identifier quoting. */
export const quoteId = (engine: ShardDb['engine'], id: string): string =>
  engine === 'postgres' ? quotePostgresId(id) : quoteMysqlId(id);

/** The reference async_task DDL of the engine. */
export const asyncTaskDdl = (engine: ShardDb['engine'], table: string): string[] =>
  (engine === 'postgres' ? postgresDdl : mysqlDdl).asyncTask(quoteId(engine, table), table);

/** Creates `database` unless it exists, on a connection to the server's default database. */
export async function createDatabase(admin: ShardDb, database: string): Promise<void> {
  if (admin.engine === 'mysql') {
    await admin.query(`CREATE DATABASE IF NOT EXISTS ${quoteMysqlId(database)} CHARACTER SET utf8mb4`);
    return;
  }
  const found = await admin.query(
    `SELECT 1 FROM pg_database WHERE datname = '${database.replace(/'/g, "''")}'`,
  );
  if (found.length === 0) await admin.query(`CREATE DATABASE ${quotePostgresId(database)}`);
}

/** Drops `database` (PostgreSQL: its sessions are ended first). */
export async function dropDatabase(admin: ShardDb, database: string): Promise<void> {
  await admin.query(
    admin.engine === 'mysql'
      ? `DROP DATABASE IF EXISTS ${quoteMysqlId(database)}`
      : `DROP DATABASE IF EXISTS ${quotePostgresId(database)} WITH (FORCE)`,
  );
}

/** The time expressions the seed and the ground truth need, per engine. */
export function timeSql(engine: ShardDb['engine']) {
  return engine === 'mysql'
    ? {
        now: 'NOW()',
        plus: (at: string, seconds: string) => `${at} + INTERVAL (${seconds}) SECOND`,
        minus: (at: string, seconds: string) => `${at} - INTERVAL (${seconds}) SECOND`,
        epoch: (at: string) => `UNIX_TIMESTAMP(${at})`,
        seconds: (from: string, to: string) => `TIMESTAMPDIFF(SECOND, ${from}, ${to})`,
      }
    : {
        now: "date_trunc('second', now())",
        plus: (at: string, seconds: string) => `${at} + make_interval(secs => ${seconds})`,
        minus: (at: string, seconds: string) => `${at} - make_interval(secs => ${seconds})`,
        epoch: (at: string) => `FLOOR(EXTRACT(EPOCH FROM ${at}))`,
        seconds: (from: string, to: string) => `FLOOR(EXTRACT(EPOCH FROM ${to} - ${from}))`,
      };
}
