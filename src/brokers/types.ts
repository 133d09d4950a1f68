// Over 300 lines: the one data API of every broker kind, with the shapes moves, recovers and their intents share.
/**
 * The data API every broker kind answers (one module per kind: `redis/`, `rabbitmq/`): how many,
 * how old, peek these, move these. Commands (`queues`, `queues move`, `queues recover`), `report`,
 * `doctor` and the console call it; nothing here renders. Field names are the `queues --json`
 * contract; a field that does not apply to a broker kind is null, never 0.
 */

import type { LocalClock } from '../core/clock.js';

export type BrokerKind = 'redis' | 'rabbitmq';

/** Dead-letter detail from a peeked sample (RabbitMQ `x-death`); null where it does not apply. */
export interface DeadLettered {
  /** Messages of the sample that carry an x-death header. */
  count: number;
  /** The highest x-death `count` seen in the sample. */
  maxDeathCount: number;
  /** Sum of x-death counts by reason (`rejected`, `expired`, `maxlen`, `delivery_limit`). */
  byReason: Record<string, number>;
  /** Queues the sample's messages were dead-lettered from. */
  sourceQueues?: string[];
}

/** Delivery counts from a peeked sample (RabbitMQ quorum queues' `x-delivery-count`); null where it does not apply. */
export interface Deliveries {
  /** Messages of the sample that came back at least once (`x-delivery-count` above 0). */
  redelivered: number;
  /** The highest `x-delivery-count` seen in the sample: how often that message was returned. */
  maxDeliveryCount: number;
}

/** One queue as `queues --json` shows it. */
export interface QueueStats {
  name: string;
  ready: number | null;
  delayed: number | null;
  delayedOverdue: number | null;
  oldestOverdueSeconds: number | null;
  reserved: number | null;
  reservedExpired: number | null;
  unacked: number | null;
  consumers: number | null;
  durable: boolean | null;
  arguments: Record<string, unknown> | null;
  deadLettered: DeadLettered | null;
  /** RabbitMQ (quorum queues); null for other brokers and when nothing was peeked. */
  deliveries?: Deliveries | null;
  /** Only with `--peek N`: the first N jobs of the ready list (Redis), read without taking them. */
  samples?: QueueSample[];
  /** BullMQ only: its own counts per state, and the stalled jobs (active, lock gone). */
  bullmq?: BullmqCounts;
  /** BullMQ only, with `--peek N` (the console: a few): the first N failed jobs with their payload and error. */
  failedJobs?: FailedJobDetail[];
}

/** A BullMQ queue's counts, as its `Queue.getJobCounts` gives them, and its stalled jobs. */
export interface BullmqCounts {
  wait: number;
  active: number;
  delayed: number;
  prioritized: number;
  paused: number;
  failed: number;
  completed: number;
  /** Active jobs whose lock key is gone: their worker died mid-job. */
  stalled: number;
  stalledIds: string[];
}

/** One failed BullMQ job: what it carried and why it failed. */
export interface FailedJobDetail {
  jobId: string;
  name: string;
  data: unknown;
  failedReason: string | null;
  stacktrace: string[];
  attemptsMade: number;
  finishedOn: number | null;
}

/** A failed BullMQ job to retry, as a sweep read it: the failure it means is the one that ended at `finishedOn`. */
export interface FailedJobRef {
  jobId: string;
  finishedOn: number | null;
}

/** What a retry of one failed BullMQ job did: retried, or why BullMQ no longer holds that failure. */
export type FailedRetryOutcome = { retried: true } | { retried: false; reason: string };

/** One peeked job: who it is and what it runs, never its whole payload. */
export interface QueueSample {
  jobId: string;
  /** The job class / display name, when the payload names one. */
  name: string | null;
  attempts: number | null;
  bytes: number;
}

export type FindingLevel = 'warn' | 'crit';

/** Finding codes: Redis and RabbitMQ. */
export const FINDING_CODES = [
  'delayed-overdue',
  'reservation-expired',
  'unknown-queue',
  'stale-queue',
  'no-persistence',
  'evicting',
  'key-format',
  'ttl-without-dlx',
  'dlx-unroutable',
  'not-durable',
  'ttl-long',
  'no-consumers',
  'parked-messages',
  'backlog-growing',
  'retry-exhausted',
  'stalled-jobs',
  'no-delivery-limit',
  'dlx-at-most-once',
] as const;
export type FindingCode = (typeof FINDING_CODES)[number];

/** Codes at which messages are being lost: `crit`; every other code is `warn`. */
export const CRITICAL_FINDINGS: ReadonlySet<FindingCode> = new Set([
  'ttl-without-dlx',
  'dlx-unroutable',
  'evicting',
]);

export function findingLevel(code: FindingCode): FindingLevel {
  return CRITICAL_FINDINGS.has(code) ? 'crit' : 'warn';
}

export interface QueueFinding {
  code: FindingCode;
  level: FindingLevel;
  broker: string;
  /** null for broker-wide findings (persistence, eviction). */
  queue: string | null;
  count: number | null;
  message: string;
  hint: string;
  /** Set when an active acknowledgement (`taskrecon ack`) covers it: shown, not counted. */
  acknowledged?: Acknowledgement;
}

/** The acknowledgement that keeps a finding or a queue breach quiet until it expires. */
export interface Acknowledgement {
  id: number;
  /** When it expires (ISO-8601 UTC). */
  until: string;
  reason: string;
  operator: string;
}

/** A finding of a broker's queue (queue null: of the broker itself), its level from its code. */
export function finding(
  code: FindingCode,
  broker: string,
  queue: string | null,
  count: number | null,
  message: string,
  hint: string,
): QueueFinding {
  return { code, level: findingLevel(code), broker, queue, count, message, hint };
}

/** One broker as `queues --json` shows it; `url` is always masked (`user:***@host`). */
export interface BrokerReport {
  name: string;
  kind: BrokerKind;
  /** Redis key layout (`laravel`, `thinkphp`, …); null for RabbitMQ. */
  framework: string | null;
  url: string;
  queues: QueueStats[];
  /** What could not be found out and why (RabbitMQ without the management API: arguments unknown). */
  notes?: string[];
}

/** `queues --json`. */
export interface QueuesResult {
  now: string;
  brokers: BrokerReport[];
  findings: QueueFinding[];
}

/** What `queues move` moves: Redis lists and sets; RabbitMQ has only ready messages. */
export type MoveWhat = 'ready' | 'delayed' | 'reserved' | 'all' | 'failed';

/** `queues move --json` (and `queues recover`, with `to` the ready queue). */
export interface MoveResult {
  broker: string;
  from: string;
  to: string;
  what: MoveWhat;
  dryRun: boolean;
  /**
   * What the run set out to move; a Redis move that was not stopped lowers it by what left the source
   * meanwhile without it (another move or the workers took it): moved below matched means a stop,
   * or jobs still at the source.
   */
  matched: number;
  moved: number;
  runId: string;
  /**
   * RabbitMQ: messages of earlier runs that were killed between publishing a batch and settling its
   * intent: each may be at the target and also was left at the source (so moved again, or still
   * there). By the killed run; this run audited them. Absent for Redis.
   */
  possibleDuplicates?: { runId: string; from: string; to: string; messageIds: string[] }[];
}

/**
 * A snapshot of one queue's depth, kept between runs for `stale-queue` and `backlog-growing`:
 * rows of `taskrecon_queue_snapshot` in the configured database, or a `--state FILE`.
 */
export interface QueueSnapshot {
  broker: string;
  queue: string;
  /** ready (+ delayed + reserved for Redis) as counted at `atEpoch`. */
  depth: number;
  ready: number;
  atEpoch: number;
}

/** One job or message a move carried, for its audit row. */
export interface MovedJob {
  /** Laravel's payload `uuid`, think-queue's payload `id`, the AMQP `message-id`, else a fingerprint. */
  jobId: string;
  from: string;
  to: string;
  /** Redis: the set it left and the set it went to (`ready`, `delayed`, `reserved`). */
  fromSet?: string;
  toSet?: string;
  /** The payload as it was, when the move kept it (audit `before_json`). */
  payload?: string;
  /** The payload's SHA-1 and byte size, when the broker gave them instead of the payload. */
  digest?: { sha1: string; bytes: number };
}

/** A batch's write-ahead intent, as the verb keeps it: opened before the broker write, settled after. */
export interface BatchIntents {
  /** Commits the intent of a batch about to be published; out: a handle to settle it by. */
  open(jobs: readonly MovedJob[]): Promise<number>;
  /** Closes it in one transaction with the audit rows of `moved`; `notMoved` were put back at the source. */
  settle(handle: number, moved: readonly MovedJob[], notMoved: readonly MovedJob[]): Promise<void>;
}

/** One batch of a move as its write-ahead intent names it, and as a later run looks for it. */
export interface BatchLanding {
  /** The run that opened the intent, and the intent's id: together they name the broker-side marker. */
  runId: string;
  intentId: number;
  from: string;
  to: string;
  fromSet: string;
  toSet: string;
}

/**
 * The write-ahead journal of a move (Redis): each batch's intent is committed before the batch
 * touches the broker, and settled with the batch's audit rows once it has landed.
 */
export interface MoveJournal {
  /** Commits the batch's intent; out: its id. */
  open(batch: Omit<BatchLanding, 'runId' | 'intentId'>): Promise<number>;
  /** Settles the intent with one audit row per moved job (none moved: closed as not landed). */
  settle(intentId: number, moved: readonly MovedJob[]): Promise<void>;
}

/** Where BullMQ holds a job: its state, the end of its last run, for an active job whether it is locked. */
export interface JobWhere {
  state: string;
  finishedOn: number | null;
  locked?: boolean;
}

/** A job a batch is about to move, as its write-ahead intent names it (BullMQ: known before the batch). */
export interface PickedJob extends MovedJob {
  /** The end of the failure the move retries (BullMQ's `finishedOn`): still there, the move never happened. */
  finishedOn: number | null;
  /** With `--to`: the id the job gets in the other queue (a second add of it is a no-op). */
  targetId?: string;
}

/**
 * The write-ahead journal of a move whose jobs are known before the batch (BullMQ): the batch's
 * intent, naming each job, is committed before BullMQ is asked, and settled with the audit rows of
 * the jobs that moved after.
 */
export interface JobJournal {
  /** Commits the batch's intent; out: its id. */
  open(from: string, to: string, jobs: readonly PickedJob[]): Promise<number>;
  /** Settles it with one audit row per moved job (`picked`: how many the batch named). */
  settle(intentId: number, moved: readonly MovedJob[], picked: number): Promise<void>;
}

/** A move or recover, as the verb hands it to a broker's data API. */
export interface MoveRequest {
  from: string;
  /** Target queue; RabbitMQ may publish to an exchange instead. */
  to?: string;
  toExchange?: string;
  routingKey?: string;
  what: MoveWhat;
  /** At most this many jobs (undefined: all that match). */
  limit?: number;
  /** Jobs per second (undefined: as fast as the broker takes them). */
  ratePerSecond?: number;
  /** The clock the rate is kept on (default: the system's). */
  clock?: LocalClock;
  /** Batch size: one atomic step. */
  batch: number;
  dryRun: boolean;
  /** RabbitMQ: drop `x-death` from the republished message. */
  resetDeath?: boolean;
  /** RabbitMQ: only messages with this header value / whose body contains this text. */
  match?: { header?: { name: string; value: string }; body?: string };
  /** BullMQ: only these failed jobs, by id (each must be in the failed set, else nothing moves). */
  jobIds?: string[];
  runId: string;
  /** Called after each batch has landed, with the jobs it moved (the audit rows are written here). */
  onBatch(moved: readonly MovedJob[]): Promise<void>;
  /**
   * RabbitMQ: the write-ahead intents. When given, each batch's intent is opened (and committed)
   * before any of it is published, and settled, with the audit rows of what landed, after the
   * confirms and the acks; `onBatch` is not called then.
   */
  intents?: BatchIntents;
  /** Redis: the write-ahead journal every batch goes through (instead of `onBatch`). */
  journal?: MoveJournal;
  /** BullMQ: the write-ahead journal every batch of failed jobs goes through (instead of `onBatch`). */
  jobJournal?: JobJournal;
  /** Checked between batches: true after SIGINT (the batch under way finishes, then the move stops). */
  shouldStop(): boolean;
}

/** A check `doctor` prints for a broker. */
export interface BrokerCheck {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  hint?: string;
}

/** What a broker kind's data API answers. Opened by `openBroker()`; always closed by the caller. */
export interface BrokerClient {
  readonly name: string;
  readonly kind: BrokerKind;
  /** Counts (never whole lists), `peek` sampled messages per queue, and the findings they show. */
  inspect(options: { peek: number; nowEpoch: number; failedDetail?: number }): Promise<{
    report: BrokerReport;
    findings: QueueFinding[];
  }>;
  move(request: MoveRequest): Promise<MoveResult>;
  /**
   * Redis only: overdue delayed jobs and expired reservations back to their ready list, as the
   * framework's own worker migrates them; one result per queue and set. `request.from` names the
   * queue, or is undefined for every queue; `to` and `what` are ignored.
   */
  recover?(request: Omit<MoveRequest, 'from'> & { from?: string }): Promise<MoveResult[]>;
  /**
   * Redis: where a batch of a killed run went. The jobs it moved when it landed; null when it did
   * not, and then it never will (the batch is fenced off). `forgetBatch` removes what the look read.
   */
  lookBatch?(batch: BatchLanding): Promise<MovedJob[] | null>;
  forgetBatch?(batch: BatchLanding): Promise<void>;
  /** BullMQ: the queues of its prefix (exit 3 when it holds none, naming the prefixes that do). */
  bullmqQueues?(): Promise<string[]>;
  /** BullMQ: a page of a queue's failed jobs, newest first, with their name, data and error. */
  failedJobs?(queue: string, start: number, count: number): Promise<FailedJobDetail[]>;
  /**
   * BullMQ: `Job.retry('failed')` of one job, only while BullMQ still holds it failed with the
   * failure that was read (the same `finishedOn`); BullMQ's own script refuses a job no longer failed.
   */
  retryFailedJob?(queue: string, job: FailedJobRef): Promise<FailedRetryOutcome>;
  /**
   * BullMQ: where a job is now (its state, the end of its last run, and for an active job whether a
   * worker holds its lock); null when BullMQ no longer holds it.
   */
  jobState?(queue: string, jobId: string): Promise<JobWhere | null>;
  /**
   * Names this process's connections after the run (before its first write-ahead intent), so that
   * other runs see it alive for as long as it stays connected: Redis CLIENT SETNAME on every master;
   * RabbitMQ `connection_name` in the client properties and an exclusive queue of that name.
   */
  nameRun?(runId: string): Promise<void>;
  /**
   * Whether the run is still connected to the broker (as `nameRun` named it); undefined when the
   * server does not tell (Redis: CLIENT LIST refused; RabbitMQ: the look was refused).
   */
  runAlive?(runId: string): Promise<boolean | undefined>;
  /**
   * BullMQ: the last step of a `--to` move a killed run left half done — the job, added to the other
   * queue already, removed from the failed set of `queue` while it is still that failure there.
   */
  finishMove?(queue: string, jobId: string, finishedOn: number | null): Promise<void>;
  doctor(): Promise<BrokerCheck[]>;
  close(): Promise<void>;
}
