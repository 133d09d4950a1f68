import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { EngineDb } from './engine-db.js';
import type { TestSchema } from './mariadb.js';

/** The DDL of a framework's table, from fixtures/schemas (shared by tests, demo and drills). */
export function schemaFixture(name: string): string {
  return readFileSync(fileURLToPath(new URL(`../../fixtures/schemas/${name}.sql`, import.meta.url)), 'utf8');
}

/**
 * A framework's table on any engine: fixtures/schemas/NAME.sql on MySQL, fixtures/schemas/ENGINE/NAME.sql
 * on the others (the shape that framework, or its users by hand, create there), one statement at a time.
 */
export async function createEngineFixtureTable(db: EngineDb, name: string): Promise<void> {
  const text = schemaFixture(db.engine === 'mysql' ? name : `${db.engine}/${name}`);
  const statements = text
    .replace(/^--.*$/gm, '')
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const statement of statements) await db.run(statement);
}

/** Creates a framework's table in a throw-away schema exactly as its fixture defines it. */
export async function createFixtureTable(schema: TestSchema, name: string): Promise<void> {
  await schema.sql.query(schemaFixture(name));
}

/** A config whose source `failed` (a failed-jobs profile) re-pushes onto these queue connections (one YAML line each). */
export function failedJobsConfig(dsn: string, profile: string, connections: string[]): string {
  return [
    `db: ${dsn}`,
    'sources:',
    '  failed:',
    `    profile: ${profile}`,
    '    queue:',
    '      connections:',
    ...connections.map((c) => `        ${c}`),
    '',
  ].join('\n');
}

/**
 * Laravel's `failed_jobs` and `jobs` (its database queue) on any engine, as Laravel's migrations
 * create them there: the MySQL fixtures, or the PostgreSQL and SQLite grammars' DDL.
 */
export async function createLaravelQueueTables(db: EngineDb): Promise<void> {
  if (db.engine === 'mysql') {
    await db.run(schemaFixture('laravel_failed_jobs'));
    await db.run(schemaFixture('laravel_jobs'));
    return;
  }
  const statements =
    db.engine === 'postgres'
      ? [
          `CREATE TABLE failed_jobs (id bigserial PRIMARY KEY, uuid varchar(255) NOT NULL, connection text NOT NULL,
             queue text NOT NULL, payload text NOT NULL, exception text NOT NULL,
             failed_at timestamp(0) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL)`,
          'ALTER TABLE failed_jobs ADD CONSTRAINT failed_jobs_uuid_unique UNIQUE (uuid)',
          `CREATE TABLE jobs (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload text NOT NULL,
             attempts smallint NOT NULL, reserved_at integer, available_at integer NOT NULL, created_at integer NOT NULL)`,
          'CREATE INDEX jobs_queue_index ON jobs (queue)',
        ]
      : [
          `CREATE TABLE "failed_jobs" ("id" integer primary key autoincrement not null, "uuid" varchar not null,
             "connection" text not null, "queue" text not null, "payload" text not null, "exception" text not null,
             "failed_at" datetime not null default CURRENT_TIMESTAMP)`,
          'CREATE UNIQUE INDEX "failed_jobs_uuid_unique" on "failed_jobs" ("uuid")',
          `CREATE TABLE "jobs" ("id" integer primary key autoincrement not null, "queue" varchar not null,
             "payload" text not null, "attempts" integer not null, "reserved_at" integer,
             "available_at" integer not null, "created_at" integer not null)`,
          'CREATE INDEX "jobs_queue_index" on "jobs" ("queue")',
        ];
  for (const statement of statements) await db.run(statement);
}

/**
 * think-queue's `failed_jobs` (with `fail_time`) and `jobs` (its database queue, unix seconds) on
 * any engine: the MySQL fixtures, or the same columns in PostgreSQL's and SQLite's types
 * (`fail_time` a wall-clock time on PostgreSQL, as think-migration's `timestamp` creates it).
 */
export async function createThinkQueueTables(db: EngineDb): Promise<void> {
  if (db.engine === 'mysql') {
    await db.run(schemaFixture('thinkphp_failed_jobs'));
    await db.run(schemaFixture('thinkphp_jobs'));
    return;
  }
  const time = db.engine === 'postgres' ? 'timestamp(0) without time zone' : 'datetime';
  const int = db.engine === 'postgres' ? 'integer' : 'INTEGER';
  for (const statement of [
    `CREATE TABLE failed_jobs (id ${db.autoId}, connection varchar(255) NOT NULL, queue varchar(255) NOT NULL,
       payload text NOT NULL, exception text NOT NULL, fail_time ${time} NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
    'CREATE INDEX idx_fail_time ON failed_jobs (fail_time)',
    `CREATE TABLE jobs (id ${db.autoId}, queue varchar(255) NOT NULL, payload text NOT NULL, attempts smallint NOT NULL,
       reserve_time ${int} NULL, available_time ${int} NOT NULL, create_time ${int} NOT NULL)`,
    'CREATE INDEX idx_jobs_queue ON jobs (queue)',
  ])
    await db.run(statement);
}
