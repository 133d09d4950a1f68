import type { LocalClock } from '../../core/clock.js';
import type { LogicalStatus, TaskId } from '../../core/task.js';
import type { ManualFilter } from '../../db/port/index.js';
import type { Queryable, Row } from '../../db/types.js';
import type { TaskEffect } from '../../core/effect.js';
import type { QueueConnectionConfig } from '../../dispatch/failed-job-queue.js';
import type { CompensateAction } from '../../core/compensate-plan.js';
import type { SourceInfo } from '../task-lists.js';
import type { SettledIntent } from '../intents/index.js';

/** The request and result of a compensation run (the JSON contract of `compensate`). */

/**
 * `skipped`: held back, unchanged, because other tasks named in the same run were refused.
 * `would-fail` (dry runs of a failed-job retry): the row's queue target cannot take it now.
 */
export type CompensateOutcome =
  'applied' | 'would-apply' | 'would-fail' | 'already' | 'refused' | 'lost-race' | 'skipped';

export interface CompensateItem {
  id: TaskId;
  from: string | null;
  to: string | null;
  outcome: CompensateOutcome;
  /** Why it was not applied, in words an operator acts on. */
  reason?: string;
  /** A retry's effect state from the diff rules covering the task (absent for other actions). */
  effect?: TaskEffect;
}

/** What the effect check of a retry came to (absent for other actions). */
export interface EffectSummary {
  present: number;
  duplicated: number;
  missing: number;
  noRule: number;
  /** Not retried because the effect is there (present or duplicated), each audited. */
  refused: number;
  /** Retried although the effect is there (--force-effect), each audited. */
  forced: number;
  /** The ids of the refused ones (the first MAX_KEPT_RESULTS). */
  refusedIds: TaskId[];
}

/** The effect check a retry runs: the checker, and whether a present effect is retried anyway. */
export interface EffectGate {
  check(rows: readonly Row[], q?: Queryable): Promise<Map<string, TaskEffect>>;
  /** --force-effect: retry tasks whose effect is there, each audited as forced. */
  force: boolean;
}

/** The JSON contract of `compensate`, plus what a script needs to follow up. */
export interface CompensateResult {
  action: CompensateAction;
  operator: string;
  dryRun: boolean;
  matched: number;
  applied: number;
  skipped: number;
  refused: number;
  /** Dry runs: rows whose queue target would not take them (also counted in `skipped`). */
  wouldFail?: number;
  runId: string;
  source: SourceInfo;
  interrupted: boolean;
  durationMs: number;
  results: CompensateItem[];
  /** Items beyond MAX_KEPT_RESULTS are counted here, not listed (the audit log has every change: `audit --run RUNID`). */
  resultsOmitted: number;
  /** What wrote a job system's jobs (`pg-boss 10.4.2 (schema 24)`, `River (migration version 6)`); absent when nothing was loaded. */
  client?: string;
  /** A retry's effect check, when one ran. */
  effect?: EffectSummary;
  /** Re-pushes killed runs left open on this source, settled (by looking at Redis) before this run wrote anything. */
  settledIntents?: SettledIntent[];
  /** With --now: what running the retried tasks at once came to (as redrive counts it). */
  dispatched?: { claimed: number; succeeded: number; retried: number; failed: number; lostRace: number };
}

export interface CompensateRequest {
  action: CompensateAction;
  operator: string;
  host: string;
  reason: string | null;
  dryRun: boolean;
  runId: string;
  /** Explicit task ids; otherwise `filter` selects. */
  ids?: TaskId[];
  statuses?: LogicalStatus[];
  filter: ManualFilter;
  /** At most this many rows; 0 = every match. */
  limit: number;
  /** Rows per second; undefined = as fast as the database goes. */
  rate?: number;
  /** The clock the rate is kept on (default: the system's). */
  clock?: LocalClock;
  batchSize?: number;
  queueConnections?: Record<string, QueueConnectionConfig>;
  /** How the audit rows name the change (default: the action and the row's event id); the sweep records `sweep-retry` and the job identity. */
  audit?: { action: string; eventId: (row: Row) => string | null };
  /**
   * Named ids that were picked from a list (the picker): a task refused for its effect is skipped,
   * listed and audited, and the others go on; ids named on the command line move all or none.
   */
  skipEffectRefusals?: boolean;
  /** A retry checks each task's effect first (see EffectGate); without it, nothing is checked. */
  effects?: EffectGate;
  /** Polled between batches: true stops the run after the batch in hand (SIGINT). */
  shouldStop?: () => boolean;
  onProgress?: (done: number, total: number, applied: number) => void;
  /** Called with the ids of each committed batch's changed tasks. */
  onApplied?: (ids: TaskId[]) => void;
}

export const MAX_KEPT_RESULTS = 1000;
export const DEFAULT_BATCH = 250;
