import type { LocalClock } from '../../core/clock.js';
import type { RetryPolicies } from '../../core/backoff.js';
import type { TaskId } from '../../core/task.js';
import type { DispatcherRegistry } from '../../dispatch/types.js';

/** The JSON contract of `redrive`, plus what an operator needs to read it. */
export interface RedriveResult {
  /** Rows this run claimed (due pending + recovered stuck); on a dry run, rows it would claim. */
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  /** Handed to a queue (`redis-list`, `rabbitmq`): left processing under the lease until the consumer writes the outcome. */
  delivered: number;
  /** Outcomes not written because the claim's lease had been taken over by another worker. */
  lostRace: number;
  /** Of `claimed`, processing rows whose lease had expired. */
  recoveredStuck: number;
  dryRun: boolean;
  durationMs: number;
  /** Claims handed back unattempted (shutdown on SIGINT/SIGTERM). */
  released: number;
  /** Stopped early by a signal. */
  interrupted: boolean;
  /** Due or stuck rows of biz types that have no handler and no default: left alone, reported. */
  unhandled: Array<{ bizType: string | null; count: number }>;
  source: string;
  /** The run's fixed cutoff (database clock), ISO-8601 UTC. */
  now: string;
  leaseSeconds: number;
  stuckAfterSeconds: number;
  skipLocked: boolean;
}

export type RedriveCounts = Pick<
  RedriveResult,
  'claimed' | 'succeeded' | 'delivered' | 'retried' | 'failed' | 'lostRace' | 'recoveredStuck' | 'released'
>;

/** A run's counts before its first claim. */
export function zeroCounts(): RedriveCounts {
  return {
    claimed: 0,
    succeeded: 0,
    delivered: 0,
    retried: 0,
    failed: 0,
    lostRace: 0,
    recoveredStuck: 0,
    released: 0,
  };
}

/** One structured line per attempt (`--log-format json`), after its outcome is committed. */
export interface RedriveEvent {
  event:
    | 'task_success'
    | 'task_delivered'
    | 'task_retry'
    | 'task_failed'
    | 'task_lost_race'
    | 'task_released'
    | 'batch_claimed';
  taskId?: TaskId;
  eventId?: string | null;
  bizType?: string | null;
  attempt?: number;
  waitSeconds?: number;
  exhausted?: boolean;
  error?: string;
  detail?: string;
  kind?: 'due' | 'stuck';
  count?: number;
}

export interface RedriveOptions {
  /** Rows per claim (default 500, the classic task-table design). */
  batch: number;
  /** Pause between batches, ms (default 100). */
  pauseMs: number;
  /** Tasks dispatched at once per process. */
  concurrency: number;
  /** Stop after claiming this many (undefined: until the backlog as of the cutoff is done). */
  maxTasks?: number;
  /** How long a claim is held before another worker may take it over, seconds. */
  leaseSeconds: number;
  /** A processing row untouched this long (and past its lease) is stuck, ms. */
  stuckAfterMs: number;
  bizTypes?: string[];
  /** Only these task ids (compensate --now drives the tasks it has just retried). */
  ids?: TaskId[];
  dryRun: boolean;
  dispatchers: DispatcherRegistry;
  policies: RetryPolicies;
  /** Aborted: stop claiming, release what was not started, settle what is in flight. */
  stop?: AbortSignal;
  /** Aborted: also give up on dispatches in flight (they are released, not counted). */
  abort?: AbortSignal;
  log?: (event: RedriveEvent) => void;
  onProgress?: (counts: RedriveCounts) => void;
  /** Use FOR UPDATE SKIP LOCKED (default: detected on the server). */
  skipLocked?: boolean;
  random?: () => number;
  /** Extend running claims' leases (default true); false only as a diagnostic switch. */
  heartbeat?: boolean;
  /** The local clock for pacing and the lease check before dispatch (default: the system clock). */
  clock?: LocalClock;
}
