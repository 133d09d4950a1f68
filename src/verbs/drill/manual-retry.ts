import { hostname } from 'node:os';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { compensate } from '../compensate/index.js';

/**
 * The drill's manual retry: exactly what `taskrecon compensate IDS --action retry --yes` does
 * (compensate's own code, guarded and audited), on the drill's task ids and its biz type only.
 */
export async function manualRetry(
  source: BoundSource,
  ids: TaskId[],
  options: { operator: string; reason: string; runId: string; bizType: string },
): Promise<number> {
  const result = await compensate(source, {
    action: 'retry',
    operator: options.operator,
    host: hostname(),
    reason: options.reason,
    dryRun: false,
    runId: options.runId,
    ids,
    filter: { bizTypes: [options.bizType] },
    limit: 0,
  });
  return result.applied;
}
