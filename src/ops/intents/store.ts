import { store, type AuditInsert, type IntentFilter, type IntentRecord } from '../../db/port/index.js';
import type { Db, Queryable } from '../../db/types.js';

/**
 * Write-ahead intents for writes that span taskrecon's database and a broker. A batch's intent is
 * committed before the batch touches the broker (`openIntent`); once the broker confirms, the intent
 * is settled in the same transaction as the batch's audit rows (`settleIntentWithAudit`). A run
 * killed in between leaves the intent open: the next run settles it by looking where the jobs are
 * (`settleOpenIntents` with one look per kind), auditing what landed under the run that was killed.
 */

/** Who writes and why: what every intent of one run carries. */
export interface IntentMeta {
  runId: string;
  operator: string;
  host: string;
  reason: string | null;
  /** The audit action of the change (`queue-move`, `retry`, …). */
  action: string;
}

/** An intent as a run opens it. */
export interface OpenedIntent {
  id: number;
  kind: string;
  source: string;
  from: string;
  to: string;
  jobs: readonly string[];
  detail: unknown;
  meta: IntentMeta;
}

/** Audit rows are written in statements of this many rows (well under every engine's bind limit). */
const AUDIT_CHUNK = 1000;

/** How an open intent ended, as its kind's look found it at the broker. */
export interface Settlement {
  state: 'landed' | 'not-landed' | 'partial';
  /** The audit rows of the jobs that landed (naming the run that opened the intent). */
  audit: AuditInsert[];
  /** How many jobs those rows audit, when a row names more than one (a job-batch row); else one each. */
  audited?: number;
  /** Statements that commit with the settlement (e.g. deleting failed rows whose job was pushed). */
  apply?: (tx: Queryable) => Promise<void>;
  /** Runs after the settlement committed (e.g. removing the broker-side marker). */
  after?: () => Promise<void>;
}

/**
 * A kind's settle-by-looking hook: where did this intent's jobs go? It may make the answer final at
 * the broker (a batch that has not landed is fenced off so it never can), and it must not write to
 * the database itself: what it returns commits with the settlement, or not at all. Undefined: not
 * yet (the run that opened it may still be working); the intent stays open.
 */
export type IntentLook = (intent: IntentRecord) => Promise<Settlement | undefined>;

export interface SettledIntent {
  id: number;
  kind: string;
  runId: string;
  state: Settlement['state'];
  jobs: number;
  audited: number;
}

export interface SettleSummary {
  /** Open intents found (of the kinds looked for). */
  open: number;
  settled: SettledIntent[];
}

/** Creates the intent table when it is missing (a database initialised before intents existed). */
export async function requireIntentTable(db: Db): Promise<void> {
  await store.intents.ensureTable(db);
}

/**
 * Commits one intent before its batch touches the broker. Out: the intent (with its id).
 * Side effect: one INSERT in its own transaction.
 */
export async function openIntent(db: Db, intent: Omit<OpenedIntent, 'id'>): Promise<OpenedIntent> {
  const { meta } = intent;
  const id = await db.transaction((tx) =>
    store.intents.insert(tx, db.dialect, {
      runId: meta.runId,
      kind: intent.kind,
      source: intent.source,
      from: intent.from,
      to: intent.to,
      operator: meta.operator,
      host: meta.host,
      action: meta.action,
      reason: meta.reason,
      jobs: intent.jobs,
      detail: intent.detail,
    }),
  );
  return { ...intent, id };
}

/**
 * Settles one intent on `tx`: the guarded close, then its audit rows. Out: false when the intent was
 * no longer open (another run settled it), in which case nothing was written and the caller rolls
 * back whatever it meant to commit with it.
 */
export async function settleIntentWithAudit(
  tx: Queryable,
  db: Pick<Db, 'dialect'>,
  intentId: number,
  state: Settlement['state'],
  settledRun: string,
  audit: readonly AuditInsert[],
): Promise<boolean> {
  if (!(await store.intents.settle(tx, db.dialect, intentId, state, settledRun))) return false;
  for (let i = 0; i < audit.length; i += AUDIT_CHUNK)
    await store.audit.insertBatch(tx, db.dialect, audit.slice(i, i + AUDIT_CHUNK));
  return true;
}

/** Open intents, oldest first (of some kinds, one source). Reads only. */
export async function listOpenIntents(
  db: Db,
  filter: IntentFilter = {},
  limit = 1000,
): Promise<IntentRecord[]> {
  if (!(await store.intents.tableExists(db))) return [];
  return store.intents.select(db, db.dialect, 'open', filter, limit);
}

class AlreadySettled extends Error {}

/** An audit row's after image with the run that settled a killed run's intent (`settledBy`). */
export function settledByJson(afterJson: string | null | undefined, settledRun: string): string {
  return JSON.stringify({ ...(JSON.parse(afterJson ?? '{}') as object), settledBy: settledRun });
}

/**
 * Settles every open intent of the kinds `looks` knows (and of `filter`), by looking: each kind's
 * look says what landed, and the settlement, its audit rows and its `apply` commit together,
 * guarded on the intent still being open (a concurrent settler changes nothing twice).
 */
export async function settleOpenIntents(
  db: Db,
  looks: Readonly<Record<string, IntentLook>>,
  settledRun: string,
  filter: Omit<IntentFilter, 'kinds'> = {},
): Promise<SettleSummary> {
  const summary: SettleSummary = { open: 0, settled: [] };
  const kinds = Object.keys(looks);
  if (kinds.length === 0) return summary;
  let afterId = 0;
  for (;;) {
    const open = await listOpenIntents(db, { ...filter, kinds, afterId });
    if (open.length === 0) return summary;
    for (const intent of open) {
      afterId = intent.id;
      summary.open++;
      const look = looks[intent.kind];
      if (!look) continue;
      const settlement = await look(intent);
      if (!settlement) continue;
      try {
        await db.transaction(async (tx) => {
          const closed = await settleIntentWithAudit(
            tx,
            db,
            intent.id,
            settlement.state,
            settledRun,
            settlement.audit,
          );
          if (!closed) throw new AlreadySettled();
          await settlement.apply?.(tx);
        });
      } catch (error) {
        if (error instanceof AlreadySettled) continue;
        throw error;
      }
      await settlement.after?.();
      summary.settled.push({
        id: intent.id,
        kind: intent.kind,
        runId: intent.runId,
        state: settlement.state,
        jobs: intent.jobs.length,
        audited: settlement.audited ?? settlement.audit.length,
      });
    }
  }
}
