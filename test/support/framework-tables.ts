import type { TestEngine } from './engine-db.js';
import { schemaFixture } from './fixtures.js';

/**
 * A framework's table as that framework (or its users, by hand) creates it on each engine, from
 * fixtures/schemas/NAME.sql (MySQL) or fixtures/schemas/ENGINE/NAME.sql, as statements to run one
 * by one; `table` renames it. Laravel's `jobs` and `failed_jobs` follow its migrations (unix-second
 * integers in `jobs`; `failed_at` a TIMESTAMP on MySQL, `timestamp(0)` without time zone on
 * PostgreSQL, read in `appTimeZone`, UTC text on SQLite); think-queue ships no migration, so its
 * `failed_jobs` is the hand-written table of the failure-sweep design.
 */
export function frameworkTableDdl(engine: TestEngine, name: string, table?: string): string[] {
  const text = schemaFixture(engine === 'mysql' ? name : `${engine}/${name}`).replace(/^--.*$/gm, '');
  const statements = text
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (!table) return statements;
  const original = /CREATE TABLE\s+[`"]?(\w+)[`"]?/i.exec(text)?.[1];
  if (!original) throw new Error(`fixture ${name} creates no table`);
  // Whole identifiers only, quoted or bare, so `failed_jobs` in `idx_failed_jobs_…` is left alone.
  const pattern = new RegExp(`([\`"]?)\\b${original}\\b\\1`, 'g');
  return statements.map((s) => s.replace(pattern, (_m, q: string) => `${q}${table}${q}`));
}

/** Laravel's `jobs` and `failed_jobs`, as its migrations create them on `engine`. */
export function laravelTablesDdl(engine: TestEngine): string[] {
  return [...frameworkTableDdl(engine, 'laravel_jobs'), ...frameworkTableDdl(engine, 'laravel_failed_jobs')];
}

/** think-queue's failed-jobs table, named `table`. */
export function thinkphpFailedJobsDdl(engine: TestEngine, table = 'failed_jobs'): string[] {
  return frameworkTableDdl(engine, 'thinkphp_failed_jobs', table);
}

/** think-queue v3's database queue table `jobs` (what connector\Database::pushToDatabase writes). */
export function thinkphpJobsDdl(engine: TestEngine): string[] {
  return frameworkTableDdl(engine, 'thinkphp_jobs');
}
