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
