import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { JobSystemInfo } from '../db/bind-source.js';
import type { JobSystemWriter } from '../db/job-system-writer.js';
import type { Db, Queryable } from '../db/types.js';
import { TaskreconError } from '../errors.js';

export type { JobSystemWriter } from '../db/job-system-writer.js';

/**
 * pg-boss's own client, driven for the writes of compensate: `retry` (a failed job back to pg-boss's
 * `retry` state with one more allowed attempt, as `boss.retry()` does it in the installed version)
 * and `forget` (`boss.deleteJob()`). The client is loaded only here, when a write happens, and runs
 * with none of its own timers (no maintenance, no schedules, no migrations, no instance row): it
 * reads through taskrecon's connection and writes on the caller's transaction, so the change,
 * its audit rows and the row locks commit together.
 */

/** The part of pg-boss's client used here (10.x and 12.x alike). */
interface PgBossDb {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}
interface CommandResponse {
  affected?: number;
}
interface PgBossClient {
  start(): Promise<unknown>;
  stop(options?: { graceful?: boolean; wait?: boolean; close?: boolean }): Promise<void>;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  retry(name: string, ids: string[], options: { db: PgBossDb }): Promise<CommandResponse>;
  deleteJob(name: string, ids: string[], options: { db: PgBossDb }): Promise<CommandResponse>;
}
type PgBossConstructor = new (options: Record<string, unknown>) => PgBossClient;

/** pg-boss's client over a taskrecon connection or transaction (its statements carry `$n` already). */
function adapter(q: Queryable): PgBossDb {
  return { executeSql: async (text, values) => ({ rows: await q.query(text, values ?? []) }) };
}

/** The installed pg-boss: its package version and the schema version its migrations reach. */
export async function installedPgBoss(): Promise<{ version: string; schema: number | null; main: string }> {
  const require = createRequire(import.meta.url);
  let manifest: string;
  try {
    manifest = require.resolve('pg-boss/package.json');
  } catch {
    throw new TaskreconError('the pg-boss client is not installed beside taskrecon', {
      code: 'PROFILE_CAPABILITY',
      hint: 'Install it (`npm install pg-boss`) in the folder taskrecon runs from: compensate writes pg-boss jobs through it.',
    });
  }
  const pkg = JSON.parse(await readFile(manifest, 'utf8')) as {
    version?: string;
    pgboss?: { schema?: number };
  };
  let schema = pkg.pgboss?.schema ?? null;
  if (schema === null) {
    // 10.x keeps its schema version in version.json.
    const text = await readFile(join(dirname(manifest), 'version.json'), 'utf8').catch(() => null);
    schema = text ? ((JSON.parse(text) as { schema?: number }).schema ?? null) : null;
  }
  return { version: pkg.version ?? 'unknown', schema, main: require.resolve('pg-boss') };
}

/**
 * Starts pg-boss's client on `db` for the job table's schema. Refuses (exit 3) when its schema
 * version is not the database's: that client's statements are written for its own schema.
 */
export async function openPgBoss(db: Db, system: JobSystemInfo): Promise<JobSystemWriter> {
  const installed = await installedPgBoss();
  const client = `pg-boss ${installed.version} (schema ${installed.schema ?? '?'})`;
  if (system.schemaVersion === null || installed.schema !== system.schemaVersion) {
    throw new TaskreconError(
      `${client} cannot write this database's pg-boss jobs: ${system.schema}.version records ${system.schemaVersion === null ? 'no schema version' : `schema ${system.schemaVersion}`}`,
      {
        code: 'PROFILE_CAPABILITY',
        hint: 'Install the pg-boss release the application runs (`npm install --no-save pg-boss@<version>` beside taskrecon), or run its migrations; nothing was changed.',
      },
    );
  }
  const mod = (await import('pg-boss')) as unknown as { default?: unknown; PgBoss?: unknown };
  const PgBoss = (mod.PgBoss ?? mod.default) as PgBossConstructor;
  const boss = new PgBoss({
    db: adapter(db),
    schema: system.schema,
    supervise: false,
    schedule: false,
    migrate: false,
    registerInstance: false,
    useListenNotify: false,
  });
  const errors: unknown[] = [];
  boss.on('error', (error) => errors.push(error));
  await boss.start();
  return {
    client,
    async apply(tx, action, queue, ids) {
      const options = { db: adapter(tx) };
      if (action === 'mark-compensated') throw new Error('pg-boss has no cancel for a failed job');
      const response =
        action === 'retry'
          ? await boss.retry(queue, [...ids], options)
          : await boss.deleteJob(queue, [...ids], options);
      return Number(response.affected ?? 0);
    },
    async close() {
      await boss.stop({ graceful: false, wait: true, close: false });
      if (errors.length) throw errors[0];
    },
  };
}
