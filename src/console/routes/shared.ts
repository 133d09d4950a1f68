import type { Context } from 'hono';
import type { LogicalStatus } from '../../core/task.js';
import {
  ACTION_RULES,
  checkSupported,
  COMPENSATE_ACTIONS,
  type CompensateAction,
} from '../../verbs/compensate/index.js';
import type { BulkRuns } from '../bulk.js';
import type { ConsoleDeps } from '../deps.js';
import type { ConsoleEnv } from '../env.js';
import type { Flashes } from '../flash.js';
import type { Frame } from '../pages/layout.js';

export interface RouteState {
  bulk: BulkRuns;
  flashes: Flashes;
}

export type Ctx = Context<ConsoleEnv>;

/** The frame of a page for this request (the flash of a redirect included). */
export function frameFor(
  c: Ctx,
  deps: ConsoleDeps,
  state: RouteState,
  part: Pick<Frame, 'title' | 'nav'> & Partial<Frame>,
): Frame {
  return {
    csrf: c.get('csrf'),
    readOnly: deps.readOnly,
    operator: deps.operator,
    sourceName: deps.source.name,
    table: deps.source.profile.table,
    flash: state.flashes.take(c.req.query('flash')),
    hasQueues: deps.queues !== undefined,
    ...(deps.shardName !== undefined ? { shard: deps.shardName } : {}),
    // A sharded console's top level reads no one table: the header names how many shards.
    ...(deps.shards ? { table: `${deps.shards.shards.length + deps.shards.missing.length} shards` } : {}),
    ...part,
  };
}

/** The actions the table supports that move a task in `status` (none when read-only). */
export function actionsFor(deps: ConsoleDeps, status: LogicalStatus | 'unknown'): CompensateAction[] {
  if (deps.readOnly) return [];
  return COMPENSATE_ACTIONS.filter((action) => {
    if (!(ACTION_RULES[action].from as readonly string[]).includes(status)) return false;
    try {
      checkSupported(deps.source, action);
      return true;
    } catch {
      return false;
    }
  });
}
