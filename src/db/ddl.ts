import type { Dialect } from './dialect.js';

/**
 * DDL for the tables taskrecon can create (`init`): the reference task tables of the seeds and
 * taskrecon's own tables. One function per table; each engine's text is its dialect's `ddl` (under `db/engines/<engine>/`).
 */
export type DdlProfile = 'async-task' | 'job-retries';

/** The classic task-table design, with the (status, next_retry_time) index the scan reads through. */
export function asyncTaskDdl(dialect: Dialect, table = 'async_task'): string[] {
  const t = dialect.quoteId(table);
  return dialect.ddl.asyncTask(t, table);
}

/** job_retries, as the job-retries design defines it. */
export function jobRetriesDdl(dialect: Dialect, table = 'job_retries'): string[] {
  const t = dialect.quoteId(table);
  return dialect.ddl.jobRetries(t, table);
}

export const AUDIT_TABLE = 'taskrecon_audit';

/**
 * The append-only audit log: who did what to which task, before and after, and why. Written in
 * the same transaction as the change it records; taskrecon never updates or deletes its rows.
 */
export function auditDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(AUDIT_TABLE);
  return dialect.ddl.audit(t);
}

export const NOTIFY_TABLE = 'taskrecon_notify';

/**
 * What `report --notify` last sent to each webhook target, per source: the status, the breached
 * metrics and when. It keeps a persisting breach from notifying on every run (the cooldown).
 * Times are epoch seconds from the database clock. Targets are keyed by a hash, never by their URL.
 */
export function notifyDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(NOTIFY_TABLE);
  return dialect.ddl.notify(t);
}

export const ALERT_CLAIM_TABLE = 'taskrecon_alert_claim';

/**
 * One row per alerted job (task table, job identity): the sweep claims the alert here, under the
 * table's primary key, before it sends it, so two sweeps that find the same second failure at the
 * same moment send one message. `sent` turns 1 once a target took it; a claim whose message no
 * target took is deleted, one left unsent by a killed sweep can be taken over once it is stale.
 */
export function alertClaimDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(ALERT_CLAIM_TABLE);
  return dialect.ddl.alertClaim(t);
}

export function taskTableDdl(dialect: Dialect, profile: DdlProfile, table?: string): string[] {
  return profile === 'async-task' ? asyncTaskDdl(dialect, table) : jobRetriesDdl(dialect, table);
}

export const ACK_TABLE = 'taskrecon_ack';

/**
 * Acknowledged queue findings: which finding (code, broker, queue) a person has seen, why, and
 * until when it stays quiet. Times are epoch seconds from the database clock; an acknowledgement
 * ended early keeps its row with `ended_epoch` set (the audit log says who ended it).
 */
export function ackDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(ACK_TABLE);
  return dialect.ddl.ack(t);
}

export const QUEUE_SNAPSHOT_TABLE = 'taskrecon_queue_snapshot';

/**
 * Queue depths as `queues` saw them on each run, per broker and queue, for `stale-queue` (a length
 * unchanged for `staleAfter`) and `backlog-growing` (ready rising across runs). Times are epoch
 * seconds of the run (taskrecon's clock). Rows older than the longest look-back are pruned by `queues`.
 */
export function queueSnapshotDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(QUEUE_SNAPSHOT_TABLE);
  return dialect.ddl.queueSnapshot(t);
}

export const INTENT_TABLE = 'taskrecon_intent';

/**
 * Write-ahead intents: before a batch touches a broker (a queue move, a failed job re-pushed), the
 * batch's intent is committed here; after the broker confirms it is settled with its audit rows.
 * An intent left open (the run was killed) is settled by the next run, by looking at the broker.
 */
export function intentDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(INTENT_TABLE);
  return dialect.ddl.intent(t);
}

export const PUSH_MARKER_TABLE = 'taskrecon_push_marker';

/**
 * The markers of failed jobs re-pushed into a queue table of another database: written in the
 * same transaction as the jobs (`landed`, with the rows' ids), or by a later run that found the
 * intent open and nothing landed (`fenced`, so the push can never land after).
 */
export function pushMarkerDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(PUSH_MARKER_TABLE);
  return dialect.ddl.pushMarker(t);
}
