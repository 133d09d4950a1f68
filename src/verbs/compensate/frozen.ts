import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import { checkSupported } from './compensate.js';
import { pacing } from '../../core/pacer.js';
import { Run } from '../../ops/compensation/run.js';
import {
  DEFAULT_BATCH,
  type CompensateRequest,
  type CompensateResult,
} from '../../ops/compensation/types.js';

/**
 * A compensation of a frozen selection (the console's bulk action after its preview): exactly the
 * ids frozen then, a batch at a time, each batch its own transaction that locks, re-checks, writes
 * and audits. A task that arrived after the preview is not in the list, so it is never touched; a
 * frozen task moved meanwhile (retried by someone else, deleted) is counted as a lost race and left
 * alone, and never holds the others back, unlike ids named on the command line.
 */
export async function compensateFrozen(
  source: BoundSource,
  request: Omit<CompensateRequest, 'ids'> & { ids: readonly TaskId[] },
): Promise<CompensateResult> {
  checkSupported(source, request.action);
  if (!request.dryRun) await requireAuditTable(source.db);
  const ids = request.ids;
  const run = new Run(source, { ...request, ids: [...ids] }, await source.db.nowEpoch());
  const size = pacing(request.rate, request.batchSize ?? DEFAULT_BATCH).batch;
  try {
    await run.settleOpen();
    run.result.matched = ids.length;
    for (let i = 0; i < ids.length; i += size) {
      if (request.shouldStop?.()) {
        run.result.interrupted = true;
        break;
      }
      await run.batch(ids.slice(i, i + size), 'filter');
      request.onProgress?.(Math.min(i + size, ids.length), ids.length, run.result.applied);
      await run.pace();
    }
    return run.finish();
  } finally {
    await run.close();
  }
}
