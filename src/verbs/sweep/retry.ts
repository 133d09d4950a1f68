import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { SWEEP_RETRY_ACTION } from '../../db/port/index.js';
import type { Row } from '../../db/types.js';
import type { QueueConnectionConfig } from '../../dispatch/failed-job-queue.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import { checkSupported } from '../../ops/compensation/run.js';
import { pacing } from '../../core/pacer.js';
import { Run } from '../../ops/compensation/run.js';
import { MAX_KEPT_RESULTS, type CompensateItem } from '../../ops/compensation/types.js';

/**
 * The sweep's retries go through compensate's retry path, not a copy of it: the same batch locks
 * the rows, re-checks their state, re-pushes failed jobs in the framework's format (or moves a task
 * failed → pending through the state machine), deletes or updates with a guard and writes the audit
 * row in the same transaction. Two things differ: the audit action is `sweep-retry` and its
 * `event_id` is the job identity (so later sweeps can count the retries of a job), and rows go by
 * frozen ids in "filter" mode — a row another sweep retried first is a lost race, never an error.
 */
export interface SweepRetryRequest {
  ids: TaskId[];
  identityOf: (row: Row) => string | null;
  rule: string;
  rate?: number;
  dryRun: boolean;
  runId: string;
  operator: string;
  host: string;
  queueConnections?: Record<string, QueueConnectionConfig>;
}

/** Rows per transaction; the rule's rate makes batches smaller (see compensate's pacing). */
const BATCH = 100;

export async function retryThroughCompensate(
  source: BoundSource,
  request: SweepRetryRequest,
): Promise<CompensateItem[]> {
  if (request.ids.length === 0) return [];
  checkSupported(source, 'retry');
  if (!request.dryRun) await requireAuditTable(source.db);
  const out: CompensateItem[] = [];
  // One run per MAX_KEPT_RESULTS ids, so every row's outcome comes back.
  for (let start = 0; start < request.ids.length; start += MAX_KEPT_RESULTS) {
    out.push(...(await oneRun(source, request, request.ids.slice(start, start + MAX_KEPT_RESULTS))));
  }
  return out;
}

async function oneRun(
  source: BoundSource,
  request: SweepRetryRequest,
  ids: TaskId[],
): Promise<CompensateItem[]> {
  const size = pacing(request.rate, BATCH).batch;
  const run = new Run(
    source,
    {
      action: 'retry',
      operator: request.operator,
      host: request.host,
      reason: `sweep rule ${request.rule}`,
      dryRun: request.dryRun,
      runId: request.runId,
      filter: {},
      limit: 0,
      rate: request.rate,
      batchSize: size,
      queueConnections: request.queueConnections,
      audit: { action: SWEEP_RETRY_ACTION, eventId: request.identityOf },
    },
    await source.db.nowEpoch(),
  );
  try {
    await run.settleOpen();
    for (let i = 0; i < ids.length; i += size) {
      await run.batch(ids.slice(i, i + size), 'filter');
      await run.pace();
    }
    return run.finish().results;
  } finally {
    await run.close();
  }
}
