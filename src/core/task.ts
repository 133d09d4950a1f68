/** The logical statuses every profile maps its own values onto. */
export const LOGICAL_STATUSES = ['pending', 'processing', 'success', 'failed', 'compensated'] as const;
export type LogicalStatus = (typeof LOGICAL_STATUSES)[number];

/** The logical fields a profile maps onto columns. */
export const LOGICAL_FIELDS = [
  'id',
  'bizType',
  'bizId',
  'eventId',
  'payload',
  'status',
  'attempts',
  'maxAttempts',
  'nextRetryAt',
  'lastError',
  'createdAt',
  'updatedAt',
  'queue',
  'connection',
] as const;
export type LogicalField = (typeof LOGICAL_FIELDS)[number];

/** Fields holding a point in time; their column type decides how SQL reads and compares them. */
export const TIME_FIELDS = ['nextRetryAt', 'createdAt', 'updatedAt'] as const;
export type TimeField = (typeof TIME_FIELDS)[number];
export const TIME_TYPES = ['datetime', 'timestamp', 'unix'] as const;
export type TimeType = (typeof TIME_TYPES)[number];

export type TaskId = number | string;

/** The task object of the JSON contract. Times are ISO-8601 UTC; unknown is null. */
export interface Task {
  id: TaskId;
  bizType: string | null;
  bizId: string | null;
  eventId: string | null;
  status: LogicalStatus | 'unknown';
  attempts: number | null;
  nextRetryAt: string | null;
  lastError: string | null;
  createdAt: string | null;
  updatedAt: string | null;
  /** The raw status value as the table stores it. */
  rawStatus?: string | number | null;
  /** The queue and the connection a failed or queued job ran on (null when the table has none). */
  queue?: string | null;
  connection?: string | null;
  maxAttempts?: number | null;
  /** The shard that holds it, on a sharded source (addressed as SHARD:ID). */
  shard?: string;
}

/** A task with everything `show` prints. */
export interface TaskDetail extends Task {
  payload: unknown;
  payloadText: string | null;
}

export function isLogicalStatus(value: string): value is LogicalStatus {
  return (LOGICAL_STATUSES as readonly string[]).includes(value);
}

/**
 * What kind of table a profile describes: tasks, failed jobs of a queue framework, its queued jobs,
 * or the job table of a job system whose own workers run it and whose own client writes it (pg-boss).
 */
export type ProfileKind = 'task' | 'failed-jobs' | 'queue-jobs' | 'job-system';
