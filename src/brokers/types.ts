/**
 * The data API every broker kind answers (one module per kind: `redis/`, `rabbitmq/`): how many,
 * how old, peek these, move these. Commands (`queues`, `queues move`, `queues recover`), `report`,
 * `doctor` and the console call it; nothing here renders. Field names are the `queues --json`
 * contract; a field that does not apply to a broker kind is null, never 0.
 */

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
}

export type FindingLevel = 'warn' | 'crit';

/** Finding codes (SPEC): Redis and RabbitMQ. */
export type FindingCode =
  | 'delayed-overdue'
  | 'reservation-expired'
  | 'unknown-queue'
  | 'stale-queue'
  | 'no-persistence'
  | 'evicting'
  | 'key-format'
  | 'ttl-without-dlx'
  | 'dlx-unroutable'
  | 'not-durable'
  | 'ttl-long'
  | 'no-consumers'
  | 'backlog-growing'
  | 'retry-exhausted';

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
}

/** One broker as `queues --json` shows it; `url` is always masked (`user:***@host`). */
export interface BrokerReport {
  name: string;
  kind: BrokerKind;
  /** Redis key layout (`laravel`, `thinkphp`, …); null for RabbitMQ. */
  framework: string | null;
  url: string;
  queues: QueueStats[];
}

/** `queues --json`. */
export interface QueuesResult {
  now: string;
  brokers: BrokerReport[];
  findings: QueueFinding[];
}

/** What `queues move` moves: Redis lists and sets; RabbitMQ has only ready messages. */
export type MoveWhat = 'ready' | 'delayed' | 'reserved' | 'all';

/** `queues move --json` (and `queues recover`, with `to` the ready queue). */
export interface MoveResult {
  broker: string;
  from: string;
  to: string;
  what: MoveWhat;
  dryRun: boolean;
  matched: number;
  moved: number;
  runId: string;
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
