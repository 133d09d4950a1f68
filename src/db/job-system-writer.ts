import { TaskreconError } from '../errors.js';
import type { JobSystemInfo } from './bind-source.js';
import type { JobSystem, JobSystemAction } from './profiles/types.js';
import type { Queryable } from './types.js';

/**
 * River's and Oban's writes, as their own admin tools make them (neither has a client for Node):
 * the statements River's JobRetry / JobCancel / JobDelete and Oban's retry_job / cancel_job /
 * delete_job run, on the caller's transaction, after taskrecon has locked the jobs and re-checked
 * that they are failed (`discarded`). Each statement keeps that guard, so a job moved meanwhile is
 * not changed and the batch rolls back.
 */

/** What compensate asks of a job system's writer. */
export interface JobSystemWriter {
  /** `pg-boss X.Y.Z (schema N)`, `River (migration version 6)`: what made the change, for the audit. */
  readonly client: string;
  /** Applies the action to jobs of one queue on `tx`. Out: how many jobs its statement changed. */
  apply(tx: Queryable, action: JobSystemAction, queue: string, ids: readonly string[]): Promise<number>;
  close(): Promise<void>;
}

/** The migration versions whose tables these statements were checked against. */
export const SUPPORTED_VERSIONS: Record<
  Exclude<JobSystem, 'pg-boss' | 'solid-queue'>,
  { min: number; max: number; where: string }
> = {
  river: { min: 4, max: 6, where: "the highest 'main' version in river_migration" },
  oban: { min: 9, max: 13, where: "the oban_jobs table's comment (Oban's migration version)" },
};

type Statement = (table: string) => string;

/** River: JobRetry bumps max_attempts only when the job used its last attempt, as River does. */
const RIVER: Record<JobSystemAction, Statement> = {
  retry: (t) =>
    `UPDATE ${t} SET state = 'available', scheduled_at = now(),
            max_attempts = CASE WHEN attempt = max_attempts THEN max_attempts + 1 ELSE max_attempts END,
            finalized_at = NULL
      WHERE id = ANY(CAST(? AS bigint[])) AND state = 'discarded'`,
  // JobCancel on a job that is not running: cancelled, finalized now, and the cancel recorded in
  // the metadata (River's rescuer reads it), in the UTC RFC 3339 form River writes.
  'mark-compensated': (t) =>
    `UPDATE ${t} SET state = 'cancelled', finalized_at = now(),
            metadata = jsonb_set(metadata, '{cancel_attempted_at}',
                                 to_jsonb(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')), true)
      WHERE id = ANY(CAST(? AS bigint[])) AND state = 'discarded'`,
  forget: (t) => `DELETE FROM ${t} WHERE id = ANY(CAST(? AS bigint[])) AND state = 'discarded'`,
};

/** Oban: retry_job and cancel_job of Oban's Basic engine; its times are UTC without a zone. */
const OBAN: Record<JobSystemAction, Statement> = {
  retry: (t) =>
    `UPDATE ${t} SET state = 'available', max_attempts = GREATEST(max_attempts, attempt + 1),
            scheduled_at = timezone('UTC', now()), completed_at = NULL, cancelled_at = NULL, discarded_at = NULL
      WHERE id = ANY(CAST(? AS bigint[])) AND state = 'discarded'`,
  'mark-compensated': (t) =>
    `UPDATE ${t} SET state = 'cancelled', cancelled_at = timezone('UTC', now())
      WHERE id = ANY(CAST(? AS bigint[])) AND state = 'discarded'`,
  forget: (t) => `DELETE FROM ${t} WHERE id = ANY(CAST(? AS bigint[])) AND state = 'discarded'`,
};

const LABEL = { river: 'River', oban: 'Oban' } as const;

/**
 * The writer of a River or Oban job table. Refuses (exit 3, before anything is written) a table
 * whose recorded migration version is not one these statements were checked against.
 */
export function openSqlJobWriter(system: JobSystemInfo, quotedTable: string): JobSystemWriter {
  const name = system.name;
  if (name === 'pg-boss') throw new Error('pg-boss is written through its own client');
  if (name === 'solid-queue') throw new Error('Solid Queue is written through its execution tables');
  const range = SUPPORTED_VERSIONS[name];
  const version = system.schemaVersion;
  if (version === null || version < range.min || version > range.max) {
    throw new TaskreconError(
      `${LABEL[name]} jobs in ${system.schema} cannot be written: ${version === null ? `no migration version found (${range.where})` : `migration version ${version} is not one taskrecon writes (${range.min} to ${range.max})`}`,
      {
        code: 'PROFILE_CAPABILITY',
        hint: `Point the source at a ${LABEL[name]} job table migrated by ${LABEL[name]} itself (versions ${range.min}–${range.max}); nothing was changed.`,
      },
    );
  }
  const statements = name === 'river' ? RIVER : OBAN;
  return {
    client: `${LABEL[name]} (migration version ${version})`,
    async apply(tx: Queryable, action, _queue, ids) {
      const result = await tx.execute(statements[action](quotedTable), [[...ids]]);
      return result.affectedRows;
    },
    close: () => Promise.resolve(),
  };
}
