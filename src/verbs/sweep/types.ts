import type { QueueConnectionConfig } from '../../dispatch/failed-job-queue.js';
import type { SweepOutcome } from '../../core/sweep-rules.js';
import type { SettledIntent } from '../../ops/intents/index.js';

/** The request and result of a failure sweep (the JSON contract of `sweep`). */

/**
 * What happened to one failed row: `retried` (pushed back / back to pending, audited),
 * `would-retry` (dry run), `deferred` (outside its window: `eligibleAt`), `held` (for a person),
 * `second-failure` (retried `maxSweeps` times already and failed again), `lost-race` (another
 * sweep or compensate run retried it first), `refused` (the retry path cannot retry it: `reason`).
 */
export type SweepItemOutcome =
  Exclude<SweepOutcome, 'retry'> | 'retried' | 'would-retry' | 'lost-race' | 'refused';

export interface SweepItem {
  /** The source of a table row; the broker of a BullMQ job. */
  source: string;
  /** BullMQ jobs: the queue that holds the job (`id` is its job id there). */
  queue?: string;
  /** The shard the row is in, on a sharded source. */
  shard?: string;
  id: string | number;
  bizType: string | null;
  rule: string;
  outcome: SweepItemOutcome;
  /** ISO-8601 UTC; deferred rows only. */
  eligibleAt: string | null;
  /** The job identity the audit log counts sweeps by. */
  identity: string;
  /** When the row failed (ISO-8601 UTC), where the table says. */
  failedAt: string | null;
  /** Second failures: whether this run alerted it (false: alerted before, not asked, or the webhook failed). */
  alerted?: boolean;
  reason?: string;
  /** A retried or refused row's effect state from the diff rules (present, missing, duplicated, no-rule). */
  effect?: string;
}

export interface SweepResult {
  now: string;
  /** The previous sweep's time: rows that failed at or after it are new. */
  since: string;
  dryRun: boolean;
  /** Rows in scope that a rule matched. */
  matched: number;
  /** Rows in scope that no rule matched (left alone). */
  unmatched: number;
  retried: number;
  deferred: number;
  held: number;
  secondFailures: number;
  lostRace: number;
  refused: number;
  /** Of the refused, those whose business effect is already there (audited as effect-refused). */
  effectRefused: number;
  /** Second failures alerted by this run. */
  alerted: number;
  sources: string[];
  /** BullMQ brokers whose failed jobs the rules swept. */
  brokers?: string[];
  /** BullMQ retries a killed sweep left open, settled by this run by looking at each job. */
  settledIntents?: SettledIntent[];
  /** On sharded sources: every shard swept, each in its own database. */
  shards?: string[];
  results: SweepItem[];
  /** Items beyond MAX_SWEEP_RESULTS are counted, not listed. */
  resultsOmitted: number;
  runId: string;
  notifications: Array<{ kind: string; target: string; outcome: 'sent' | 'failed'; error: string | null }>;
  durationMs: number;
}

/** One source to sweep, with where its failed jobs go back to. */
export interface SweepTarget {
  queueConnections?: Record<string, QueueConnectionConfig>;
}

export const MAX_SWEEP_RESULTS = 5000;
