// Over 300 lines: every built-in profile in one place, each a plain description of a table.
import type { Profile } from './types.js';

/** The classic task-table design: the reference task table. status tinyint 0 pending … 4 compensated. */
export const asyncTask: Profile = {
  name: 'async-task',
  summary: 'The reference async_task table: status tinyint 0..4, retry_count, next_retry_time.',
  kind: 'task',
  table: 'async_task',
  fields: {
    id: { column: 'id' },
    bizType: { column: 'biz_type' },
    bizId: { column: 'biz_id' },
    eventId: { column: 'event_id' },
    payload: { column: 'payload' },
    attempts: { column: 'retry_count' },
    nextRetryAt: { column: 'next_retry_time' },
    lastError: { column: 'last_error' },
    createdAt: { column: 'created_at' },
    updatedAt: { column: 'updated_at' },
  },
  timeTypes: {},
  status: {
    kind: 'column',
    column: 'status',
    values: { pending: [0], processing: [1], success: [2], failed: [3], compensated: [4] },
  },
  defaultStuckAfterMs: 10 * 60_000,
  expectedLastErrorLength: 512,
};

/** The job-retries design: job_retries with an ENUM status and no created/updated columns (latency is n/a). */
export const jobRetries: Profile = {
  name: 'job-retries',
  summary:
    "The job_retries table: ENUM('pending','retrying','failed'), attempts/max_attempts, next_retry_at.",
  kind: 'task',
  table: 'job_retries',
  fields: {
    id: { column: 'id' },
    bizType: { column: 'task_name' },
    eventId: { column: 'job_id' },
    payload: { column: 'payload' },
    attempts: { column: 'attempts' },
    maxAttempts: { column: 'max_attempts' },
    nextRetryAt: { column: 'next_retry_at' },
    lastError: { column: 'last_error' },
  },
  timeTypes: {},
  status: {
    kind: 'column',
    column: 'status',
    values: { pending: ['pending'], processing: ['retrying'], failed: ['failed'] },
  },
  defaultStuckAfterMs: 10 * 60_000,
  notes: ['job_retries has no created_at/updated_at: latency and stuck detection are n/a'],
};

/** Laravel's `failed_jobs` (with uuid): every row is failed; retry re-pushes the payload. */
export const laravelFailedJobs: Profile = {
  name: 'laravel-failed-jobs',
  summary: "Laravel's failed_jobs: id, uuid, connection, queue, payload, exception, failed_at.",
  kind: 'failed-jobs',
  table: 'failed_jobs',
  fields: {
    id: { column: 'id' },
    eventId: { column: 'uuid' },
    bizType: { json: 'payload', path: '$.displayName' },
    payload: { column: 'payload' },
    attempts: { json: 'payload', path: '$.attempts' },
    maxAttempts: { json: 'payload', path: '$.maxTries' },
    lastError: { column: 'exception' },
    updatedAt: { column: 'failed_at' },
    queue: { column: 'queue' },
    connection: { column: 'connection' },
  },
  timeTypes: {},
  status: { kind: 'constant', status: 'failed' },
  defaultStuckAfterMs: 10 * 60_000,
};

/** Laravel's database queue `jobs`: unix-int times; a reserved job older than retry_after is stuck. */
export const laravelJobs: Profile = {
  name: 'laravel-jobs',
  summary:
    "Laravel's database queue jobs: queue, payload, attempts, reserved_at, available_at, created_at (unix).",
  kind: 'queue-jobs',
  table: 'jobs',
  fields: {
    id: { column: 'id' },
    bizType: { json: 'payload', path: '$.displayName' },
    eventId: { json: 'payload', path: '$.uuid' },
    payload: { column: 'payload' },
    attempts: { column: 'attempts' },
    nextRetryAt: { column: 'available_at' },
    createdAt: { column: 'created_at' },
    updatedAt: { column: 'reserved_at' },
    queue: { column: 'queue' },
  },
  timeTypes: { nextRetryAt: 'unix', createdAt: 'unix', updatedAt: 'unix' },
  status: { kind: 'reservation', column: 'reserved_at' },
  // Laravel's default `retry_after` for the database connection.
  defaultStuckAfterMs: 90_000,
};

/**
 * think-queue's `failed_jobs` (the failed-jobs design): fail_time instead of failed_at, payload
 * {job, maxTries, timeout, data, attempts} (+ id from the Redis connector). A job pushed as an
 * object runs as `think\queue\CallQueuedHandler@call` with its class in `data.commandName`: that
 * class is the biz type. The worker logs the payload before its last attempt is counted, so the
 * attempts it ran are the payload's + 1. The payload id is the event id (the sweep's identity too).
 */
export const thinkphpFailedJobs: Profile = {
  name: 'thinkphp-failed-jobs',
  summary: "think-queue's failed_jobs: id, connection, queue, payload, exception, fail_time.",
  kind: 'failed-jobs',
  table: 'failed_jobs',
  fields: {
    id: { column: 'id' },
    bizType: { json: 'payload', path: '$.job', firstPath: '$.data.commandName' },
    eventId: { json: 'payload', path: '$.id' },
    payload: { column: 'payload' },
    attempts: { json: 'payload', path: '$.attempts', plus: 1 },
    maxAttempts: { json: 'payload', path: '$.maxTries' },
    lastError: { column: 'exception' },
    updatedAt: { column: 'fail_time' },
    queue: { column: 'queue' },
    connection: { column: 'connection' },
  },
  timeTypes: {},
  status: { kind: 'constant', status: 'failed' },
  defaultStuckAfterMs: 10 * 60_000,
};

/**
 * pg-boss's job table, read through the parent `pgboss.job` so every queue's partition counts
 * (another schema: `table: myschema.job`). The queue name is the biz type, `data` the payload,
 * `output` the error (pg-boss stores the thrown error there); a job is stuck when it is active past
 * `started_on` plus its own expiry (`expire_in` in 10.x, `expire_seconds` in 11+) or, in 11+, past its
 * heartbeat. Writes go through pg-boss's own client (dispatch/pg-boss.ts).
 */
export const pgBoss: Profile = {
  name: 'pg-boss',
  summary:
    "pg-boss's job table (pgboss.job, every queue's partition): state created/retry/active/completed/cancelled/failed.",
  kind: 'job-system',
  system: 'pg-boss',
  // What its client has: boss.retry() and boss.deleteJob() (a failed job cannot be cancelled).
  systemActions: ['retry', 'forget'],
  table: 'pgboss.job',
  fields: {
    id: { column: 'id' },
    bizType: { column: 'name' },
    eventId: { column: 'id' },
    payload: { column: 'data' },
    attempts: { column: 'retry_count' },
    maxAttempts: { column: 'retry_limit' },
    nextRetryAt: { column: 'start_after' },
    lastError: { column: 'output' },
    createdAt: { column: 'created_on' },
    updatedAt: { column: 'completed_on' },
  },
  timeTypes: {},
  status: {
    kind: 'column',
    column: 'state',
    values: {
      pending: ['created', 'retry'],
      processing: ['active'],
      success: ['completed'],
      failed: ['failed'],
      compensated: ['cancelled'],
    },
  },
  stuck: {
    started: 'started_on',
    expiry: [
      { column: 'expire_seconds', unit: 'seconds' },
      { column: 'expire_in', unit: 'interval' },
    ],
    heartbeat: { at: 'heartbeat_on', seconds: 'heartbeat_seconds' },
  },
  // Stuck as soon as pg-boss's own expiry (stored per job) has passed.
  defaultStuckAfterMs: 0,
};

/**
 * Solid Queue's `solid_queue_jobs` (MySQL/MariaDB, PostgreSQL, SQLite): a job's state is the
 * execution table that holds it: ready, scheduled or blocked is pending, claimed is processing, a
 * failed execution is failed, `finished_at` set is success; a job no execution holds and not
 * finished is an orphan. The class is the biz type, the failed execution's `error` the last error,
 * ActiveJob's `executions` (in `arguments`) the attempts. Stuck: a claimed job whose process's
 * heartbeat is older than 5 minutes (Solid Queue's process_alive_threshold) or whose process is gone.
 */
export const solidQueue: Profile = {
  name: 'solid-queue',
  summary:
    "Solid Queue's solid_queue_jobs: state = the execution table holding the job (ready/scheduled/blocked, claimed, failed), finished_at.",
  kind: 'job-system',
  system: 'solid-queue',
  table: 'solid_queue_jobs',
  fields: {
    id: { column: 'id' },
    bizType: { column: 'class_name' },
    eventId: { column: 'active_job_id' },
    payload: { column: 'arguments' },
    attempts: { json: 'arguments', path: '$.executions' },
    nextRetryAt: { column: 'scheduled_at' },
    lastError: { execution: 'solid_queue_failed_executions', read: 'error' },
    createdAt: { column: 'created_at' },
    updatedAt: { column: 'updated_at' },
    queue: { column: 'queue_name' },
  },
  timeTypes: {},
  status: {
    kind: 'executions',
    finished: 'finished_at',
    jobKey: 'job_id',
    tables: [
      { raw: 'failed', table: 'solid_queue_failed_executions', status: 'failed' },
      { raw: 'claimed', table: 'solid_queue_claimed_executions', status: 'processing' },
      { raw: 'ready', table: 'solid_queue_ready_executions', status: 'pending' },
      { raw: 'scheduled', table: 'solid_queue_scheduled_executions', status: 'pending' },
      { raw: 'blocked', table: 'solid_queue_blocked_executions', status: 'pending' },
    ],
    claimed: {
      table: 'solid_queue_claimed_executions',
      process: 'process_id',
      processes: 'solid_queue_processes',
      heartbeat: 'last_heartbeat_at',
      since: 'created_at',
    },
  },
  // Solid Queue's process_alive_threshold: a process silent this long is dead.
  defaultStuckAfterMs: 5 * 60_000,
};

/**
 * River's job table (`river_job`, PostgreSQL). The job kind is the biz type, `args` the payload,
 * `errors` (one JSON object per failed attempt) the error. `discarded` is failed, `cancelled`
 * compensated; a `running` job whose `attempted_at` is older than the rescue time (River's
 * `RescueStuckJobsAfter`, 1 hour unless configured; `stuckAfter` on the source) is stuck. Writes are
 * the statements River's own JobRetry and JobCancel run (dispatch/job-system-sql.ts).
 */
export const river: Profile = {
  name: 'river',
  summary:
    "River's river_job: state available/scheduled/retryable/pending/running/completed/discarded/cancelled.",
  kind: 'job-system',
  system: 'river',
  systemActions: ['retry', 'forget', 'mark-compensated'],
  writtenColumns: ['finalized_at'],
  table: 'river_job',
  fields: {
    id: { column: 'id' },
    bizType: { column: 'kind' },
    eventId: { column: 'id' },
    payload: { column: 'args' },
    attempts: { column: 'attempt' },
    maxAttempts: { column: 'max_attempts' },
    nextRetryAt: { column: 'scheduled_at' },
    lastError: { column: 'errors' },
    createdAt: { column: 'created_at' },
    updatedAt: { column: 'attempted_at' },
    queue: { column: 'queue' },
  },
  timeTypes: {},
  status: {
    kind: 'column',
    column: 'state',
    values: {
      pending: ['available', 'scheduled', 'retryable', 'pending'],
      processing: ['running'],
      success: ['completed'],
      failed: ['discarded'],
      compensated: ['cancelled'],
    },
  },
  // River's rescuer: a job running for an hour is stuck.
  defaultStuckAfterMs: 60 * 60_000,
};

/**
 * Oban's job table (`oban_jobs`, PostgreSQL). The worker module is the biz type, `args` the payload,
 * `errors` the error. `discarded` is failed, `cancelled` compensated; an `executing` job whose
 * `attempted_at` is older than the rescue time (the Lifeline plugin's `rescue_after`, 60 minutes) is
 * stuck. Oban's times are UTC in `timestamp without time zone`. Writes are the statements
 * `Oban.retry_job` and `Oban.cancel_job` run (dispatch/job-system-sql.ts).
 */
export const oban: Profile = {
  name: 'oban',
  summary: "Oban's oban_jobs: state available/scheduled/retryable/executing/completed/discarded/cancelled.",
  kind: 'job-system',
  system: 'oban',
  systemActions: ['retry', 'forget', 'mark-compensated'],
  writtenColumns: ['completed_at', 'discarded_at', 'cancelled_at'],
  table: 'oban_jobs',
  fields: {
    id: { column: 'id' },
    bizType: { column: 'worker' },
    eventId: { column: 'id' },
    payload: { column: 'args' },
    attempts: { column: 'attempt' },
    maxAttempts: { column: 'max_attempts' },
    nextRetryAt: { column: 'scheduled_at' },
    lastError: { column: 'errors' },
    createdAt: { column: 'inserted_at' },
    updatedAt: { column: 'attempted_at' },
    queue: { column: 'queue' },
  },
  timeTypes: {},
  utcWallClock: true,
  status: {
    kind: 'column',
    column: 'state',
    values: {
      pending: ['available', 'scheduled', 'retryable'],
      processing: ['executing'],
      success: ['completed'],
      failed: ['discarded'],
      compensated: ['cancelled'],
    },
  },
  // Oban's Lifeline plugin: an executing job is rescued after 60 minutes.
  defaultStuckAfterMs: 60 * 60_000,
};

export const BUILTIN_PROFILES: readonly Profile[] = [
  asyncTask,
  jobRetries,
  laravelFailedJobs,
  laravelJobs,
  thinkphpFailedJobs,
  pgBoss,
  solidQueue,
  river,
  oban,
];
