import type { TestEngine } from './engine-db.js';
import { schemaFixture } from './fixtures.js';

/**
 * Laravel's `jobs` and `failed_jobs` as its own migrations create them on each engine: unix-second
 * integers in `jobs`; `failed_at` a TIMESTAMP on MySQL, `timestamp(0)` without time zone on
 * PostgreSQL (a wall-clock time, read in `appTimeZone`), `datetime` text on SQLite. Statements to
 * run one by one (MySQL's fixtures hold two each, which its seeding connection takes at once).
 */
export function laravelTablesDdl(engine: TestEngine): string[] {
  switch (engine) {
    case 'mysql':
      return [schemaFixture('laravel_jobs'), schemaFixture('laravel_failed_jobs')];
    case 'postgres':
      return [
        `CREATE TABLE jobs (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload text NOT NULL,
          attempts smallint NOT NULL, reserved_at integer, available_at integer NOT NULL, created_at integer NOT NULL)`,
        'CREATE INDEX jobs_queue_index ON jobs (queue)',
        `CREATE TABLE failed_jobs (id bigserial PRIMARY KEY, uuid varchar(255) NOT NULL UNIQUE, connection text NOT NULL,
          queue text NOT NULL, payload text NOT NULL, exception text NOT NULL,
          failed_at timestamp(0) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL)`,
      ];
    case 'sqlite':
      return [
        `CREATE TABLE "jobs" ("id" integer primary key autoincrement not null, "queue" varchar not null,
          "payload" text not null, "attempts" integer not null, "reserved_at" integer,
          "available_at" integer not null, "created_at" integer not null)`,
        'CREATE INDEX "jobs_queue_index" on "jobs" ("queue")',
        `CREATE TABLE "failed_jobs" ("id" integer primary key autoincrement not null, "uuid" varchar not null,
          "connection" text not null, "queue" text not null, "payload" text not null, "exception" text not null,
          "failed_at" datetime not null default CURRENT_TIMESTAMP)`,
        'CREATE UNIQUE INDEX "failed_jobs_uuid_unique" on "failed_jobs" ("uuid")',
      ];
  }
}

/**
 * think-queue's failed-jobs table as the failure-sweep design hand-writes it (think-queue ships no
 * migration), named `table`: `fail_time` an instant (TIMESTAMP, timestamptz) or UTC text on SQLite.
 */
export function thinkphpFailedJobsDdl(engine: TestEngine, table = 'failed_jobs'): string[] {
  switch (engine) {
    case 'mysql':
      return [schemaFixture('thinkphp_failed_jobs').replace(/`failed_jobs`/g, `\`${table}\``)];
    case 'postgres':
      return [
        `CREATE TABLE ${table} (id bigserial PRIMARY KEY, connection varchar(255) NOT NULL, queue varchar(255) NOT NULL,
          payload text NOT NULL, exception text NOT NULL, fail_time timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
        `CREATE INDEX idx_${table}_fail_time ON ${table} (fail_time)`,
      ];
    case 'sqlite':
      return [
        `CREATE TABLE "${table}" ("id" integer primary key autoincrement not null, "connection" varchar not null,
          "queue" varchar not null, "payload" text not null, "exception" text not null,
          "fail_time" datetime not null default CURRENT_TIMESTAMP)`,
        `CREATE INDEX "idx_${table}_fail_time" on "${table}" ("fail_time")`,
      ];
  }
}

/** think-queue v3's database queue table `jobs` (what connector\Database::pushToDatabase writes). */
export function thinkphpJobsDdl(engine: TestEngine): string[] {
  switch (engine) {
    case 'mysql':
      return [schemaFixture('thinkphp_jobs')];
    case 'postgres':
      return [
        `CREATE TABLE jobs (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload text NOT NULL,
          attempts smallint NOT NULL, reserve_time integer, available_time integer NOT NULL, create_time integer NOT NULL)`,
        'CREATE INDEX jobs_queue ON jobs (queue)',
      ];
    case 'sqlite':
      return [
        `CREATE TABLE "jobs" ("id" integer primary key autoincrement not null, "queue" varchar not null,
          "payload" text not null, "attempts" integer not null, "reserve_time" integer,
          "available_time" integer not null, "create_time" integer not null)`,
        'CREATE INDEX "jobs_queue" on "jobs" ("queue")',
      ];
  }
}
