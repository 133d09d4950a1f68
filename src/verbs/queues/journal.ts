import type { BatchLanding, BrokerClient, MovedJob, MoveJournal } from '../../brokers/types.js';
import type { IntentRecord } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { TaskreconError } from '../../errors.js';
import {
  openIntent,
  requireIntentTable,
  settleIntentWithAudit,
  settleOpenIntents,
  type IntentLook,
  type SettleSummary,
} from '../../ops/intents/index.js';
import { batchAuditRows, metaOfIntent, type MoveAuditMeta } from './move-audit.js';

/**
 * The write-ahead journal of Redis `queues move` and `queues recover`: each batch's intent is
 * committed before its script runs and settled with the batch's audit after (one job-batch row per
 * batch, naming every job: see batchAuditRows); intents a killed
 * run left open are settled first, by looking at the batch's marker in Redis.
 */

/** The intent kinds of the Redis moves, by the audit action they record. */
export const INTENT_KIND = { 'queue-move': 'redis-move', 'queue-recover': 'redis-recover' } as const;

/** What an intent of a Redis move keeps beside its jobs (the keys and sets of its batch). */
type BatchDetail = Omit<BatchLanding, 'runId' | 'intentId'>;

function landingOf(intent: IntentRecord): BatchLanding {
  const detail = intent.detail as BatchDetail;
  return { ...detail, runId: intent.runId, intentId: intent.id };
}

/** Whether each run is still connected to the broker, asked once per run id. */
export function runLiveness(broker: BrokerClient): (runId: string) => Promise<boolean | undefined> {
  const known = new Map<string, Promise<boolean | undefined>>();
  return (runId) => {
    let alive = known.get(runId);
    if (!alive) {
      alive = broker.runAlive?.(runId) ?? Promise.resolve(undefined);
      known.set(runId, alive);
    }
    return alive;
  };
}

/** The journal of one run: `meta` names the run, its operator and reason. */
export async function moveJournal(db: Db, meta: MoveAuditMeta): Promise<MoveJournal> {
  await requireIntentTable(db);
  const kind = INTENT_KIND[meta.action as keyof typeof INTENT_KIND];
  return {
    async open(batch) {
      const opened = await openIntent(db, {
        kind,
        source: meta.broker,
        from: batch.from,
        to: batch.to,
        // The script picks the jobs atomically; the marker lists the ones it took.
        jobs: [],
        detail: batch satisfies BatchDetail,
        meta: { ...meta },
      });
      return opened.id;
    },
    async settle(intentId, moved: readonly MovedJob[]) {
      const rows = batchAuditRows(moved, meta);
      const closed = await db.transaction((tx) =>
        settleIntentWithAudit(tx, db, intentId, moved.length ? 'landed' : 'not-landed', meta.runId, rows),
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

/**
 * Settles the open intents of this broker's moves and recovers: a batch whose marker lists jobs
 * landed and is audited under the run that moved it; a batch without one is fenced off and closed.
 * A batch of a run still connected to the broker (its named connection is open) is left to that
 * run; where the broker cannot tell (CLIENT LIST refused), every open batch is settled.
 */
export async function settleOpenMoves(
  db: Db,
  broker: BrokerClient,
  settledRun: string,
): Promise<SettleSummary> {
  const { lookBatch, forgetBatch } = broker;
  if (!lookBatch || !forgetBatch) return { open: 0, settled: [] };
  await requireIntentTable(db);
  const alive = runLiveness(broker);
  const look: IntentLook = async (intent) => {
    if ((await alive(intent.runId)) === true) return undefined;
    const landing = landingOf(intent);
    const moved = await lookBatch.call(broker, landing);
    if (!moved) return { state: 'not-landed', audit: [] };
    return {
      state: moved.length ? 'landed' : 'not-landed',
      audit: batchAuditRows(moved, metaOfIntent(intent), settledRun),
      audited: moved.length,
      after: () => forgetBatch.call(broker, landing),
    };
  };
  return settleOpenIntents(
    db,
    { [INTENT_KIND['queue-move']]: look, [INTENT_KIND['queue-recover']]: look },
    settledRun,
    { source: broker.name },
  );
}
