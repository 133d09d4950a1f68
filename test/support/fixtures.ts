import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TestSchema } from './mariadb.js';

/** The DDL of a framework's table, from fixtures/schemas (shared by tests, demo and drills). */
export function schemaFixture(name: string): string {
  return readFileSync(fileURLToPath(new URL(`../../fixtures/schemas/${name}.sql`, import.meta.url)), 'utf8');
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
