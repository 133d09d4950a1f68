import { createHash } from 'node:crypto';
import {
  JOB_BATCH_TASK_ID,
  type AuditInsert,
  type BatchJob,
  type IntentRecord,
  type JobBatchBefore,
} from '../../db/port/index.js';
import type { MovedJob } from '../../brokers/types.js';

/** The audit table's columns are this wide; longer queue keys are cut, the whole key stays in the JSON. */
const AUDIT_NAME_WIDTH = 64;

export function cut(text: string): string {
  return text.length <= AUDIT_NAME_WIDTH ? text : text.slice(0, AUDIT_NAME_WIDTH);
}

/**
 * The payload as the audit keeps it: its SHA-1 and size, not its text. Jobs stay in Redis, where a
 * move never loses one; a million-job move would otherwise copy gigabytes of serialized jobs
 * into the audit table (and halve the move's speed).
 */
function payloadDigest(payload: string | undefined): { sha1: string | null; bytes: number | null } {
  if (payload === undefined) return { sha1: null, bytes: null };
  return { sha1: createHash('sha1').update(payload).digest('hex'), bytes: Buffer.byteLength(payload) };
}

/** What every audit row of one move or recover run says besides the job. */
export interface MoveAuditMeta {
  operator: string;
  host: string;
  action: string;
  broker: string;
  reason: string | null;
  runId: string;
}

/** Who moved what and why, as the intent of a batch recorded it (the killed run, not the settling one). */
export function metaOfIntent(intent: IntentRecord): MoveAuditMeta {
  return {
    operator: intent.operator,
    host: intent.host,
    action: intent.action,
    broker: intent.source,
    reason: intent.reason,
    runId: intent.runId,
  };
}

/**
 * One audit row per moved job: the queue keys and sets in from/to, the payload's digest before.
 * `settledBy`: the run that found the batch's intent open and audited it (the run named is the one
 * that moved the jobs and was killed before it could).
 */
export function auditRows(jobs: readonly MovedJob[], meta: MoveAuditMeta, settledBy?: string): AuditInsert[] {
  return jobs.map((job) => ({
    operator: meta.operator,
    host: meta.host,
    action: meta.action,
    source: cut(meta.broker),
    taskTable: cut(job.from),
    taskId: cut(job.jobId),
    eventId: cut(job.jobId),
    fromStatus: job.fromSet ?? null,
    toStatus: job.toSet ?? null,
    beforeJson: JSON.stringify({
      queue: job.from,
      set: job.fromSet ?? null,
      ...(job.digest ?? payloadDigest(job.payload)),
    }),
    afterJson: JSON.stringify({
      queue: job.to,
      set: job.toSet ?? null,
      ...(settledBy ? { settledBy } : {}),
    }),
    reason: meta.reason,
    runId: meta.runId,
  }));
}

function sameWay(a: MovedJob, b: MovedJob): boolean {
  return a.from === b.from && a.to === b.to && a.fromSet === b.fromSet && a.toSet === b.toSet;
}

/**
 * The audit of one Redis batch as job-batch rows: one row per (from, to) of the batch (a batch has
 * one) naming every job with its payload's digest; `audit` and every other reader expand it into
 * the per-job entries of auditRows(). One INSERT of one row instead of one index entry per job in
 * each of the audit table's indexes: what lets a move keep its per-batch audit at Redis's pace.
 */
export function batchAuditRows(
  jobs: readonly MovedJob[],
  meta: MoveAuditMeta,
  settledBy?: string,
): AuditInsert[] {
  const groups = new Map<string, MovedJob[]>();
  let last: MovedJob | undefined;
  let lastGroup: MovedJob[] = [];
  for (const job of jobs) {
    if (!last || !sameWay(last, job)) {
      const key = JSON.stringify([job.from, job.fromSet ?? null, job.to, job.toSet ?? null]);
      lastGroup = groups.get(key) ?? [];
      groups.set(key, lastGroup);
      last = job;
    }
    lastGroup.push(job);
  }
  return [...groups.values()].map((group) => {
    const first = group[0] as MovedJob;
    const before: JobBatchBefore = {
      queue: first.from,
      set: first.fromSet ?? null,
      jobs: group.map((job): BatchJob => {
        const { sha1, bytes } = job.digest ?? payloadDigest(job.payload);
        return [job.jobId, sha1, bytes];
      }),
    };
    return {
      operator: meta.operator,
      host: meta.host,
      action: meta.action,
      source: cut(meta.broker),
      taskTable: cut(first.from),
      taskId: JOB_BATCH_TASK_ID,
      eventId: null,
      fromStatus: first.fromSet ?? null,
      toStatus: first.toSet ?? null,
      beforeJson: JSON.stringify(before),
      afterJson: JSON.stringify({
        queue: first.to,
        set: first.toSet ?? null,
        ...(settledBy ? { settledBy } : {}),
      }),
      reason: meta.reason,
      runId: meta.runId,
    };
  });
}
