import { parseDuration } from '../../core/duration.js';
import type { BrokerConfig } from '../../config/brokers.js';
import type { Context } from '../../context.js';
import { store } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { ExitCode, type ExitCodeValue } from '../../errors.js';
import type { BrokerChoice } from '../../brokers/index.js';
import { openBroker } from '../../brokers/open/index.js';
import {
  DbSnapshotStore,
  DEFAULT_STALE_AFTER_SECONDS,
  FileSnapshotStore,
  snapshotFindings,
  snapshotsOf,
  type SnapshotStore,
} from '../../brokers/snapshots.js';
import type { BrokerClient, QueueFinding, QueuesResult } from '../../brokers/types.js';
import { findingsStatus } from '../../ops/queue-report.js';
import { acknowledgeFindings, activeAcks, unacknowledged } from '../../ops/acks.js';

export * from './request.js';
export { snapshotHistory, type SnapshotRow } from './history.js';
export { brokerFlags, moveFlags, peekFlag, rabbitMoveFlags } from './flags.js';
export { runMove, runRecover, type MoveOptions, type RecoverResult } from './move.js';
export { confirmMoveOrStop, moveOptionsOf, stoppedEarly, type MoveFlagValues } from './move-request.js';
export {
  findingsStatus,
  reportQueues,
  type QueueBreach,
  type QueueGauge,
  type QueueReportSection,
  type QueueThresholds,
} from '../../ops/queue-report.js';

/**
 * `queues`: read-only inspection of every chosen broker — counts, peeked samples, findings, and the
 * snapshot findings (`stale-queue`, `backlog-growing`) from the history kept between runs.
 */

export interface QueuesRequest {
  brokers: BrokerChoice[];
  /** Where the acknowledgements are read (the configured database); undefined: none apply. */
  ackDb?: Db;
  peek: number;
  /** BullMQ: how many failed jobs to show with payload and error (default: `peek`); read-only. */
  failedDetail?: number;
  /** Where snapshots are read and appended; undefined: no history (the snapshot findings are skipped). */
  store?: SnapshotStore;
  nowEpoch: number;
  /** For tests: how a broker is opened. */
  open?: (name: string, config: BrokerConfig) => Promise<BrokerClient>;
}

export function staleAfterOf(config: BrokerConfig, name: string): number {
  if (config.kind !== 'redis' || config.staleAfter === undefined) return DEFAULT_STALE_AFTER_SECONDS;
  return Math.round(parseDuration(config.staleAfter, `brokers.${name}.staleAfter`) / 1000);
}

export async function inspectQueues(request: QueuesRequest): Promise<QueuesResult> {
  const result: QueuesResult = {
    now: new Date(request.nowEpoch * 1000).toISOString(),
    brokers: [],
    findings: [],
  };
  const open = request.open ?? openBroker;
  for (const choice of request.brokers) {
    const broker = await open(choice.name, choice.config);
    try {
      const { report, findings } = await broker.inspect({
        peek: request.peek,
        nowEpoch: request.nowEpoch,
        failedDetail: request.failedDetail,
      });
      result.brokers.push(report);
      result.findings.push(...findings);
      if (request.store) {
        const staleAfter = staleAfterOf(choice.config, choice.name);
        const histories = await request.store.history(
          report.name,
          report.queues.map((q) => q.name),
          staleAfter,
          request.nowEpoch,
        );
        result.findings.push(...snapshotFindings(report, histories, staleAfter));
        await request.store.append(snapshotsOf(report, request.nowEpoch), staleAfter, request.nowEpoch);
      }
    } finally {
      await broker.close();
    }
  }
  if (request.ackDb) result.findings = acknowledgeFindings(result.findings, await activeAcks(request.ackDb));
  return result;
}

/**
 * 2 when a finding is crit, 1 when one is warn, else 0: the verdict `report` shows for the queues.
 * Acknowledged findings do not count.
 */
export function exitFor(findings: readonly QueueFinding[]): ExitCodeValue {
  return STATUS_EXIT[findingsStatus(unacknowledged(findings))];
}

const STATUS_EXIT = { OK: ExitCode.ok, WARNING: ExitCode.findings, CRITICAL: ExitCode.critical } as const;

/** The database acknowledgements are read from: the configured one, when one is given. */
export async function ackDbOf(context: Context): Promise<Db | undefined> {
  return databaseGiven(context) ? context.open() : undefined;
}

/** Whether a database is given (flags, environment, config): snapshots and audit rows go there. */
export function databaseGiven(context: Context): boolean {
  return Boolean(context.input.db || context.env.TASKRECON_DB || context.config.db);
}

/**
 * The snapshot store of a run: `--state FILE` when given, else the database's table when a database
 * is given and the table exists (else a note says how to create it), else none.
 */
export async function snapshotStore(
  context: Context,
  stateFile: string | undefined,
  note: (message: string) => void,
): Promise<SnapshotStore | undefined> {
  if (stateFile) return new FileSnapshotStore(stateFile);
  if (!databaseGiven(context)) return undefined;
  const db: Db = await context.open();
  if (!(await store.state.snapshotTableExists(db))) {
    note(
      `stale-queue is not checked: taskrecon_queue_snapshot does not exist in ${db.display} (create it with \`taskrecon init --audit-only\`, or pass --state FILE)`,
    );
    return undefined;
  }
  return new DbSnapshotStore(db);
}
