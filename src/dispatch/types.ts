import type { DispatchResult } from '../core/dispatch-result.js';
import type { TaskId } from '../core/task.js';

/**
 * How a task is executed for its biz type. `redrive` and `compensate`
 * (`--action retry`) both go through this interface; the registry picks one per biz type.
 */

/** What a dispatcher gets: the task as the handler sees it. */
export interface DispatchTask {
  id: TaskId;
  bizType: string | null;
  bizId: string | null;
  eventId: string | null;
  /** The payload parsed from JSON (or the raw text when it is not JSON, or null). */
  payload: unknown;
  /** The payload exactly as stored, for handlers that read it from stdin. */
  payloadText: string | null;
  /** 1 for the first delivery, 2 for the first retry, … (attempts already counted + 1). */
  attempt: number;
}

/**
 * The JSON message a dispatcher sends: the task as the handler reads it. `payload` replaces the
 * task's own where the dispatcher rewrites it.
 */
export function taskMessage(task: DispatchTask, payload: unknown = task.payload): string {
  return JSON.stringify({
    eventId: task.eventId,
    bizType: task.bizType,
    bizId: task.bizId,
    payload,
    attempt: task.attempt,
  });
}

export interface DispatchContext {
  /** Aborted when the run is told to stop hard (a second SIGINT/SIGTERM); the dispatcher gives up then. */
  signal: AbortSignal;
}

export type { DispatchOutcome, DispatchResult } from '../core/dispatch-result.js';

export interface Dispatcher {
  /** `http`, `command`, `mark-only`, … */
  readonly kind: string;
  /** Runs one task. Never throws for a task-level failure: it returns `retryable` or `permanent`. */
  dispatch(task: DispatchTask, context: DispatchContext): Promise<DispatchResult>;
  /** Releases pooled connections and the like. */
  close?(): Promise<void>;
  /** The longest one dispatch may take, when the dispatcher bounds it (a lease must outlast it). */
  readonly timeoutMs?: number;
}

/** Handlers by biz type; `default` is the fallback. An unknown biz type with no default gets none. */
export interface DispatcherRegistry {
  /** The dispatcher for a biz type, or undefined: the task is reported, never guessed. */
  forBizType(bizType: string | null): Dispatcher | undefined;
  /** Biz types with a handler of their own (not the default). */
  readonly bizTypes: readonly string[];
  readonly hasDefault: boolean;
  close(): Promise<void>;
  /** Every dispatcher it holds (to check their timeouts against a lease). */
  all?(): Dispatcher[];
}
