import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { EngineDb } from './engine-db.js';
import {
  frameworkTableDdl,
  laravelTablesDdl,
  thinkphpFailedJobsDdl,
  thinkphpJobsDdl,
} from './framework-tables.js';
import type { TestSchema } from './mariadb.js';

/** The DDL of a framework's table, from fixtures/schemas (shared by tests, demo and drills). */
export function schemaFixture(name: string): string {
  return readFileSync(fileURLToPath(new URL(`../../fixtures/schemas/${name}.sql`, import.meta.url)), 'utf8');
}

/** A framework's table on any engine, in the shape it has there (see framework-tables.ts). */
export async function createEngineFixtureTable(db: EngineDb, name: string): Promise<void> {
  for (const statement of frameworkTableDdl(db.engine, name)) await db.run(statement);
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

/** Laravel's `failed_jobs` and `jobs` (its database queue) on any engine, as its migrations create them there. */
export async function createLaravelQueueTables(db: EngineDb): Promise<void> {
  for (const statement of laravelTablesDdl(db.engine)) await db.run(statement);
}

/** think-queue's `failed_jobs` (with `fail_time`) and `jobs` (its database queue, unix seconds) on any engine. */
export async function createThinkQueueTables(db: EngineDb): Promise<void> {
  for (const statement of [...thinkphpFailedJobsDdl(db.engine), ...thinkphpJobsDdl(db.engine)])
    await db.run(statement);
}
