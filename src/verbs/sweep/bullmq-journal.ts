import type { BrokerClient } from '../../brokers/types.js';
import { store, SWEEP_RETRY_ACTION, type AuditInsert, type IntentRecord } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { TaskreconError } from '../../errors.js';
import {
  openIntent,
  requireIntentTable,
  settledByJson,
  settleIntentWithAudit,
  settleOpenIntents,
  type IntentLook,
  type SettledIntent,
} from '../../ops/intents/index.js';

/**
 * The write-ahead intents of the sweep's BullMQ retries. `Job.retry` cannot join a transaction, so
 * each retry's intent (the job, the failure it retries, its audit row) is committed first, and
 * settled after with the audit row (retried) or without (BullMQ no longer held that failure). A
 * sweep killed between the two leaves the intent open; the next sweep on the broker settles it by
 * looking at the job: still failed with the same `finishedOn` — the retry never happened; anywhere
 * else — it did, and it is audited under the killed run, unless another run audited a retry or a
 * move of the job since the intent was opened. A job BullMQ no longer holds (removed on completion,
 * or by a person) is closed without an audit row: taskrecon cannot tell which.
 */

export const BULLMQ_RETRY_KIND = 'bullmq-retry';

/**
 * An intent younger than this belongs to a sweep that may still be running (one retry takes
 * milliseconds; ten minutes is far above a stalled Redis call): it is left to that sweep.
 */
export const RETRY_INTENT_STALE_SECONDS = 600;

/** What a retry's intent keeps: where the job is, the failure it retries, and its audit row. */
interface RetryDetail {
  queue: string;
  jobId: string;
  finishedOn: number | null;
  audit: AuditInsert;
}

export class BullmqRetryJournal {
  private constructor(
    private readonly db: Db,
    private readonly broker: string,
  ) {}

  static async open(db: Db, broker: string): Promise<BullmqRetryJournal> {
    await requireIntentTable(db);
    return new BullmqRetryJournal(db, broker);
  }

  /** Commits the intent of one retry before BullMQ is asked. Out: its id. */
  async begin(audit: AuditInsert, queue: string, finishedOn: number | null): Promise<number> {
    const detail: RetryDetail = { queue, jobId: audit.taskId, finishedOn, audit };
    const opened = await openIntent(this.db, {
      kind: BULLMQ_RETRY_KIND,
      source: this.broker,
      from: queue,
      to: queue,
      jobs: [audit.taskId],
      detail,
      meta: {
        runId: audit.runId,
        operator: audit.operator,
        host: audit.host,
        reason: audit.reason,
        action: audit.action,
      },
    });
    return opened.id;
  }

  /** Settles it: with the audit row when BullMQ took the retry, else closed as not landed. */
  async end(intentId: number, retried: AuditInsert | null): Promise<void> {
    const db = this.db;
    const closed = await db.transaction((tx) =>
      settleIntentWithAudit(
        tx,
        db,
        intentId,
        retried ? 'landed' : 'not-landed',
        retried?.runId ?? '',
        retried ? [retried] : [],
      ),
    );
    if (!closed)
      throw new TaskreconError(
        `another run settled this sweep's retry (intent ${intentId}) while it ran; its job is audited there`,
        { code: 'GUARD', hint: 'Run the sweep again: it retries what is left.' },
      );
  }
}

/** Whether another run audited a retry or a move of the job since the intent was opened. */
async function auditedSince(db: Db, intent: IntentRecord, detail: RetryDetail): Promise<boolean> {
  for (const action of [SWEEP_RETRY_ACTION, 'queue-move']) {
    const rows = await store.audit.selectByIdentity(
      db,
      db.dialect,
      detail.queue,
      [detail.jobId],
      action,
      intent.source,
    );
    if (rows.some((r) => r.atEpoch >= intent.openedEpoch)) return true;
  }
  return false;
}

/** Settles the retries killed sweeps left open on this broker, by looking at each job. */
export async function settleKilledRetries(
  db: Db,
  broker: BrokerClient,
  settledRun: string,
): Promise<SettledIntent[]> {
  const { jobState } = broker;
  if (!jobState) return [];
  const now = await db.nowEpoch();
  const look: IntentLook = async (intent) => {
    if (now - intent.openedEpoch < RETRY_INTENT_STALE_SECONDS) return undefined;
    const detail = intent.detail as RetryDetail;
    const where = await jobState.call(broker, detail.queue, detail.jobId);
    const untouched = where === null || (where.state === 'failed' && where.finishedOn === detail.finishedOn);
    const landed = !untouched && !(await auditedSince(db, intent, detail));
    if (!landed) return { state: 'not-landed', audit: [] };
    return {
      state: 'landed',
      audit: [{ ...detail.audit, afterJson: settledByJson(detail.audit.afterJson, settledRun) }],
    };
  };
  return (await settleOpenIntents(db, { [BULLMQ_RETRY_KIND]: look }, settledRun, { source: broker.name }))
    .settled;
}
