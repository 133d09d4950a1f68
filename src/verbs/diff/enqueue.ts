import { randomUUID } from 'node:crypto';
import { checkTransition, targetOf } from '../../core/state-machine.js';
import type { LogicalStatus, TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store } from '../../db/port/index.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import { rowEventId, rowId, rowJson, rowStatus } from '../../ops/rows.js';

/**
 * `diff --enqueue`: tasks that say success while their effect is missing go back to pending,
 * due now, through the state machine's `requeue` transition, so the next `redrive` runs them
 * again. Each change and its audit row commit in one transaction; a task that moved on since the
 * diff read it is left alone (the guarded UPDATE changes 0 rows) and reported.
 */
export interface EnqueueRequest {
  operator: string;
  host: string;
  reason: string;
  dryRun: boolean;
  /** The run id of the audit rows (default: a new one); a sharded run gives every shard one. */
  runId?: string;
}

export interface EnqueueOutcome {
  id: TaskId;
  from: LogicalStatus | 'unknown';
  to: LogicalStatus;
  outcome: 'applied' | 'would-apply' | 'refused' | 'lost-race';
  detail?: string;
}

export interface EnqueueResult {
  runId: string;
  applied: number;
  skipped: number;
  results: EnqueueOutcome[];
}

/** Rows per transaction: short transactions, each with its rows locked from read to write. */
const BATCH = 100;
/** Results kept for the JSON output; the counts cover every task. */
const KEPT_RESULTS = 10_000;

export async function enqueueMissing(
  source: BoundSource,
  ids: readonly TaskId[],
  request: EnqueueRequest,
): Promise<EnqueueResult> {
  const result: EnqueueResult = { runId: request.runId ?? randomUUID(), applied: 0, skipped: 0, results: [] };
  const record = (o: EnqueueOutcome) => {
    if (o.outcome === 'applied' || o.outcome === 'would-apply') result.applied++;
    else result.skipped++;
    if (result.results.length < KEPT_RESULTS) result.results.push(o);
  };
  if (ids.length === 0) return result;
  if (!request.dryRun) await requireAuditTable(source.db);
  const to = targetOf('requeue');
  for (let i = 0; i < ids.length; i += BATCH) {
    const batch = ids.slice(i, i + BATCH);
    const work = async (q: Parameters<Parameters<typeof source.db.transaction>[0]>[0]) => {
      const rows = await store.tasks.selectWholeRows(q, source, batch, !request.dryRun);
      const byId = new Map(rows.map((r) => [String(rowId(source.sql, r)), r]));
      for (const id of batch) {
        const before = byId.get(String(id));
        if (!before) {
          record({ id, from: 'unknown', to, outcome: 'lost-race', detail: 'the task no longer exists' });
          continue;
        }
        const from = rowStatus(source.sql, before);
        const check = checkTransition('requeue', from);
        if (!check.allowed) {
          record({ id, from, to, outcome: 'refused', detail: check.reason });
          continue;
        }
        if (request.dryRun) {
          record({ id, from, to, outcome: 'would-apply' });
          continue;
        }
        const changed = await store.tasks.applyTransition(q, source, {
          transition: 'requeue',
          id,
          nextRetryAt: 'now',
        });
        if (changed === 0) {
          record({
            id,
            from,
            to,
            outcome: 'lost-race',
            detail: 'the task changed between the read and the write',
          });
          continue;
        }
        const [after] = await store.tasks.selectWholeRows(q, source, [id], false);
        await store.audit.insert(q, source.db.dialect, {
          operator: request.operator,
          host: request.host,
          action: 'requeue',
          source: source.name,
          taskTable: source.profile.table,
          taskId: String(id),
          eventId: rowEventId(source.sql, before),
          fromStatus: from,
          toStatus: to,
          beforeJson: rowJson(before),
          afterJson: after ? rowJson(after) : null,
          reason: request.reason,
          runId: result.runId,
        });
        record({ id, from, to, outcome: 'applied' });
      }
    };
    if (request.dryRun) await work(source.db);
    else await source.db.transaction(work);
  }
  return result;
}
