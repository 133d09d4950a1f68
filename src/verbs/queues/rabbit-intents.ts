import { MOVE_INTENT_KIND } from '../../brokers/rabbitmq/move.js';
import type { BatchIntents, MovedJob, MoveResult } from '../../brokers/types.js';
import type { IntentRecord } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import {
  listOpenIntents,
  openIntent,
  requireIntentTable,
  settleIntentWithAudit,
  settleOpenIntents,
  type IntentLook,
  type SettledIntent,
} from '../../ops/intents/index.js';
import { batchAuditRows, metaOfIntent, type MoveAuditMeta } from './move-audit.js';

/**
 * The write-ahead intents of RabbitMQ moves (kind `rabbitmq-move`): one per batch, committed before
 * the batch is published, settled after the confirms and the acks with the batch's audit: one
 * job-batch row naming every message that landed with its body's SHA-1 and size (see
 * batchAuditRows; every reader of the audit expands it into one entry per message).
 * A run killed in between leaves its intent open. RabbitMQ cannot be asked where a message went
 * without taking it, so the next run settles such an intent without looking: every message of it
 * is audited under the killed run as possibly at the target, and reported as a possible duplicate
 * (its source was not acked, so it was moved again, or is still there to be moved).
 */

const RABBIT_MOVE_INTENT = MOVE_INTENT_KIND;

type AuditMeta = MoveAuditMeta;

/** Message ids a killed run may have put at the target as well as left at the source. */
export type PossibleDuplicates = NonNullable<MoveResult['possibleDuplicates']>;

/** The intents of one move run: `open` before each batch is published, `settle` after it. */
export function rabbitIntents(db: Db, meta: AuditMeta, broker: string): BatchIntents {
  let from = '';
  let to = '';
  let table: Promise<void> | undefined;
  return {
    async open(jobs) {
      // Created with the first batch: a move refused for bad input writes nothing.
      await (table ??= requireIntentTable(db));
      from = jobs[0]?.from ?? from;
      to = jobs[0]?.to ?? to;
      const intent = await openIntent(db, {
        kind: RABBIT_MOVE_INTENT,
        source: broker,
        from,
        to,
        jobs: jobs.map((j) => j.jobId),
        detail: null,
        meta,
      });
      return intent.id;
    },
    async settle(handle, moved, notMoved) {
      const state = notMoved.length === 0 ? 'landed' : moved.length === 0 ? 'not-landed' : 'partial';
      await db.transaction((tx) =>
        settleIntentWithAudit(tx, db, handle, state, meta.runId, batchAuditRows(moved, meta)),
      );
    },
  };
}

/**
 * The audit of a killed run's batch: every message of it, marked as possibly at the target, as one
 * job-batch row (its after image, possibleDuplicate and settledBy, is every expanded entry's; the
 * bodies are unknown, so no digest).
 */
function unconfirmedRows(intent: IntentRecord, settledBy: string) {
  const jobs: MovedJob[] = intent.jobs.map((jobId) => ({ jobId, from: intent.from, to: intent.to }));
  return batchAuditRows(jobs, metaOfIntent(intent)).map((row) => ({
    ...row,
    afterJson: JSON.stringify({ queue: intent.to, set: null, possibleDuplicate: true, settledBy }),
  }));
}

function duplicatesOf(intents: readonly IntentRecord[]): PossibleDuplicates {
  return intents.map((i) => ({ runId: i.runId, from: i.from, to: i.to, messageIds: [...i.jobs] }));
}

/** What a RabbitMQ move settled before it moved: the killed runs' batches and their messages. */
export interface KilledMoves {
  possibleDuplicates: PossibleDuplicates;
  settledIntents?: SettledIntent[];
}

/** Whether a run is still connected to the broker (undefined: the broker did not tell). */
export type RunAlive = (runId: string) => Promise<boolean | undefined>;

/**
 * Settles the open intents of earlier RabbitMQ moves on this broker (runs that were killed): their
 * messages are audited under the killed run and returned as possible duplicates. The batches of a
 * run still connected (`alive`) are left to it, and are no duplicates. A dry run only lists them.
 */
export async function settleKilledMoves(
  db: Db,
  broker: string,
  runId: string,
  dryRun: boolean,
  alive: RunAlive = async () => undefined,
): Promise<KilledMoves> {
  const open = await listOpenIntents(db, { kinds: [RABBIT_MOVE_INTENT], source: broker });
  const known = new Map<string, Promise<boolean | undefined>>();
  const isAlive = (run: string) => {
    if (!known.has(run)) known.set(run, alive(run));
    return known.get(run) as Promise<boolean | undefined>;
  };
  if (dryRun || open.length === 0) {
    const killed: IntentRecord[] = [];
    for (const intent of open) if ((await isAlive(intent.runId)) !== true) killed.push(intent);
    return { possibleDuplicates: duplicatesOf(killed) };
  }
  const seen: IntentRecord[] = [];
  const look: IntentLook = async (intent) => {
    if ((await isAlive(intent.runId)) === true) return undefined;
    seen.push(intent);
    return { state: 'partial', audit: unconfirmedRows(intent, runId), audited: intent.jobs.length };
  };
  const summary = await settleOpenIntents(db, { [RABBIT_MOVE_INTENT]: look }, runId, { source: broker });
  const settled = new Set(summary.settled.map((s) => s.id));
  return {
    possibleDuplicates: duplicatesOf(seen.filter((i) => settled.has(i.id))),
    settledIntents: summary.settled,
  };
}
