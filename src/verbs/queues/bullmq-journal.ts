import type { BrokerClient, JobJournal, MovedJob } from '../../brokers/types.js';
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
  type Settlement,
} from '../../ops/intents/index.js';
import { auditRows, type MoveAuditMeta } from './move-audit.js';

/**
 * The write-ahead intents of `queues move --what failed` and `queues recover` on BullMQ. `Job.retry` and `Queue.add`
 * cannot join a transaction, so each batch's intent — the failed jobs it picked, the failure each
 * was (`finishedOn`), the id each gets in the other queue, their audit rows — is committed first and
 * settled with the audit rows of what moved after. A run killed in between leaves it open; the next
 * move on the broker settles it by looking at each job once that run is gone (its connection closed):
 * still failed with the same `finishedOn` — never moved; retried, or in the other queue — moved, and
 * audited under the killed run (a `--to` move it left half done is finished first: the original is
 * removed from the failed set). A recovered job is looked at the same way: still active without a
 * lock — the stalled check never moved it; anywhere else — it did (a worker's own check may have,
 * which taskrecon cannot tell apart). A job BullMQ no longer holds is closed without an audit row:
 * taskrecon cannot tell whether it moved and was removed on completion, or was removed by a person.
 */

/** The intent kinds of BullMQ's moves and recovers, by the audit action they record. */
export const BULLMQ_KIND: Readonly<Record<string, string>> = {
  'queue-move': 'bullmq-move',
  'queue-recover': 'bullmq-recover',
};

/** Without CLIENT LIST, an intent younger than this may belong to a run still moving: left to it. */
const STALE_SECONDS = 600;

/** What an intent keeps of each job. */
interface PickedDetail {
  jobId: string;
  finishedOn: number | null;
  targetId?: string;
}

interface MoveDetail {
  jobs: PickedDetail[];
  /** The audit row of each job, in the order of `jobs`. */
  audit: AuditInsert[];
}

function stateOf(moved: number, picked: number): Settlement['state'] {
  if (moved === 0) return 'not-landed';
  return moved === picked ? 'landed' : 'partial';
}

/** The journal of one run: `meta` names the run, its operator and reason. */
export async function bullmqJournal(db: Db, meta: MoveAuditMeta): Promise<JobJournal> {
  await requireIntentTable(db);
  return {
    async open(from, to, jobs) {
      const detail: MoveDetail = {
        jobs: jobs.map(({ jobId, finishedOn, targetId }) => ({ jobId, finishedOn, targetId })),
        audit: auditRows(jobs, meta),
      };
      const opened = await openIntent(db, {
        kind: BULLMQ_KIND[meta.action] ?? 'bullmq-move',
        source: meta.broker,
        from,
        to,
        jobs: jobs.map((j) => j.jobId),
        detail,
        meta: { ...meta },
      });
      return opened.id;
    },
    async settle(intentId, moved: readonly MovedJob[], picked) {
      const rows = auditRows(moved, meta);
      const closed = await db.transaction((tx) =>
        settleIntentWithAudit(tx, db, intentId, stateOf(moved.length, picked), meta.runId, rows),
      );
      if (!closed)
        throw new TaskreconError(
          `another run settled this run's batch (intent ${intentId}) while it moved; its jobs are audited there`,
          {
            code: 'GUARD',
            hint: 'Its connection to the broker was seen closed meanwhile (a reconnect, a broker restart); run the command again to move what is left.',
          },
        );
    },
  };
}

/** The jobs another run audited a retry, a move or a recovery of since the intent was opened. */
async function auditedSince(db: Db, intent: IntentRecord, ids: readonly string[]): Promise<Set<string>> {
  const seen = new Set<string>();
  const actions = intent.action === 'queue-recover' ? ['queue-recover'] : [SWEEP_RETRY_ACTION, 'queue-move'];
  for (const action of actions) {
    const rows = await store.audit.selectByIdentity(db, db.dialect, intent.from, ids, action, intent.source);
    for (const r of rows) if (r.atEpoch >= intent.openedEpoch) seen.add(r.identity);
  }
  return seen;
}

/** Where each job of a killed run's batch went: the audit rows of the ones that moved. */
async function look(
  db: Db,
  broker: BrokerClient,
  intent: IntentRecord,
  settledRun: string,
): Promise<AuditInsert[]> {
  const detail = intent.detail as MoveDetail;
  const jobState = broker.jobState?.bind(broker);
  if (!jobState) return [];
  const moved: AuditInsert[] = [];
  const inPlace = intent.to === intent.from;
  const recover = intent.kind === BULLMQ_KIND['queue-recover'];
  const others = await auditedSince(
    db,
    intent,
    detail.jobs.map((j) => j.jobId),
  );
  for (const [i, job] of detail.jobs.entries()) {
    const row = detail.audit[i];
    if (!row || others.has(job.jobId)) continue;
    const where = await jobState(intent.from, job.jobId);
    // A recovered job left active without a lock (to wait); a moved one left that failure.
    const untouched =
      where !== null &&
      (recover
        ? where.state === 'active' && where.locked === false
        : where.state === 'failed' && where.finishedOn === job.finishedOn);
    let landed: boolean;
    if (inPlace) landed = where !== null && !untouched;
    else {
      landed = job.targetId !== undefined && (await jobState(intent.to, job.targetId)) !== null;
      if (landed && untouched) await broker.finishMove?.(intent.from, job.jobId, job.finishedOn);
    }
    if (landed)
      moved.push({
        ...row,
        afterJson: settledByJson(row.afterJson, settledRun),
      });
  }
  return moved;
}

/**
 * Settles the batches killed runs left open on this broker, by looking at each job (never one of a
 * run still connected: it settles its own). Out: what was settled.
 */
export async function settleKilledBullmqMoves(
  db: Db,
  broker: BrokerClient,
  settledRun: string,
): Promise<SettledIntent[]> {
  const { runAlive } = broker;
  if (!broker.jobState || !runAlive) return [];
  const now = await db.nowEpoch();
  const runs = new Map<string, boolean | undefined>();
  const settle: IntentLook = async (intent) => {
    if (!runs.has(intent.runId)) runs.set(intent.runId, await runAlive.call(broker, intent.runId));
    const alive = runs.get(intent.runId);
    if (alive === true || (alive === undefined && now - intent.openedEpoch < STALE_SECONDS)) return undefined;
    const audit = await look(db, broker, intent, settledRun);
    return { state: stateOf(audit.length, intent.jobs.length), audit };
  };
  const looks = Object.fromEntries(Object.values(BULLMQ_KIND).map((kind) => [kind, settle]));
  return (await settleOpenIntents(db, looks, settledRun, { source: broker.name })).settled;
}
