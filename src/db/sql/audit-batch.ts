import type { Dialect } from '../dialect.js';
import type { Fragment } from '../fragment.js';
import { placeholders } from '../task-sql.js';
import type { AuditRecord } from './audit.js';

/**
 * The job-batch form of an audit row: one row records every job of one moved batch (a Redis
 * `queues move` / `queues recover` batch), where a per-job row would cost one index entry per job
 * in five indexes. Its `task_id` is JOB_BATCH_TASK_ID, its before image names each job:
 *
 *   before_json {"queue": FROM, "set": FROM_SET, "jobs": [[JOB_ID, SHA1, BYTES], …]}
 *   after_json  {"queue": TO, "set": TO_SET[, "settledBy": RUN]}
 *
 * Every reader of the audit log (`audit`, the console, a task's history) gets the row expanded: one
 * record per job, with the row's id, time, operator, run and reason, the job's id as task and event
 * id and its own before image `{"queue", "set", "sha1", "bytes"}` — what a per-job row would hold.
 */

/** The task id of a job-batch row (no job id looks like it). */
export const JOB_BATCH_TASK_ID = '(jobs)';

/** One job of a job-batch row: its id, the SHA-1 and byte size of its payload (null when unknown). */
export type BatchJob = readonly [jobId: string, sha1: string | null, bytes: number | null];

/** The before image of a job-batch row. */
export interface JobBatchBefore {
  queue: string;
  set: string | null;
  jobs: readonly BatchJob[];
}

/** The audit columns hold ids this wide; a longer job id is cut in the expanded record. */
const ID_WIDTH = 64;

const cut = (text: string): string => (text.length <= ID_WIDTH ? text : text.slice(0, ID_WIDTH));

function batchOf(record: AuditRecord): JobBatchBefore | undefined {
  if (record.taskId !== JOB_BATCH_TASK_ID || record.beforeJson === null) return undefined;
  try {
    const before = JSON.parse(record.beforeJson) as Partial<JobBatchBefore>;
    return Array.isArray(before.jobs) ? (before as JobBatchBefore) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One record per job of a job-batch row (only the jobs named in `taskIds`, when given); any other
 * row as it is.
 */
export function expandAuditRecord(record: AuditRecord, taskIds?: readonly string[]): AuditRecord[] {
  const batch = batchOf(record);
  if (!batch) return [record];
  const wanted = taskIds?.length ? new Set(taskIds) : undefined;
  const out: AuditRecord[] = [];
  for (const [jobId, sha1, bytes] of batch.jobs) {
    const id = cut(jobId);
    // A longer id is asked for whole, or as the records show it (cut).
    if (wanted && !wanted.has(id) && !wanted.has(jobId)) continue;
    out.push({
      ...record,
      taskId: id,
      eventId: id,
      beforeJson: JSON.stringify({ queue: batch.queue, set: batch.set, sha1, bytes }),
    });
  }
  return out;
}

/** A LIKE pattern with `!` as its escape character. */
function likeLiteral(text: string): string {
  return text.replace(/[!%_]/g, (c) => `!${c}`);
}

/**
 * The audit rows of these task ids: rows naming one of them, and job-batch rows listing one of
 * them among their jobs (a scan of the batch rows' before images, the ids being inside them).
 */
export function taskIdsWhere(dialect: Dialect, taskIds: readonly string[]): Fragment {
  const q = (c: string) => dialect.quoteId(c);
  // Rows keep ids cut to the column's width: a longer id is looked for as it was stored.
  const stored = [...new Set(taskIds.flatMap((id) => [id, cut(id)]))];
  const inBatch = taskIds.map(() => `${q('before_json')} LIKE ? ESCAPE '!'`).join(' OR ');
  // A batch row lists each job whole; an id as wide as the column may be the cut form of a longer one.
  const listed = (id: string) => {
    const json = JSON.stringify(id);
    return id.length >= ID_WIDTH ? `%[${likeLiteral(json.slice(0, -1))}%` : `%[${likeLiteral(json)},%`;
  };
  return {
    sql: `${q('task_id')} IN (${placeholders(stored)}) OR (${q('task_id')} = ? AND (${inBatch}))`,
    params: [...stored, JOB_BATCH_TASK_ID, ...taskIds.map(listed)],
  };
}
