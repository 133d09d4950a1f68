import type { Task, TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, idRangeWhere, type CandidateCursor } from '../../db/port/index.js';
import { and, filterWhere, inList, type Fragment } from '../../db/fragment.js';
import { toIso } from '../../db/task-sql.js';
import type { Row } from '../../db/types.js';
import { usageError } from '../../errors.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import { ACTION_RULES, selectableStatuses } from '../../core/compensate-plan.js';
import { pacing } from '../../core/pacer.js';
import { rowId } from '../../ops/rows.js';
import { checkSupported, Run } from '../../ops/compensation/run.js';
import {
  DEFAULT_BATCH,
  type CompensateRequest,
  type CompensateResult,
} from '../../ops/compensation/types.js';

export * from '../../ops/compensation/types.js';
export { checkSupported } from '../../ops/compensation/run.js';

/**
 * Manual compensation (the classic task-table design): moves selected tasks through the state
 * machine by hand, each change a guarded write with its audit row in the same transaction.
 *
 * Bulk runs go a batch at a time in index order (per status along the status index; by id where the
 * table has no status column). Each batch locks its rows, re-checks their state,
 * writes, audits and commits; a row another run moved first is skipped, never moved twice. So an
 * interrupted run continued later (the same command again) redoes nothing: moved rows no longer
 * match, and the rows of the batch that was cut short were rolled back whole.
 */

/** How many rows go in one batch: the rate's share of a fifth of a second, capped. */
function batchSize(request: CompensateRequest): number {
  return pacing(request.rate, request.batchSize ?? DEFAULT_BATCH).batch;
}

/**
 * Runs a compensation. Throws (exit 3, nothing written) for unknown ids; returns with `refused` > 0
 * and nothing written when any explicitly named task cannot take the action.
 */
export async function compensate(source: BoundSource, request: CompensateRequest): Promise<CompensateResult> {
  checkSupported(source, request.action);
  if (!request.dryRun) await requireAuditTable(source.db);
  const run = new Run(source, request, await source.db.nowEpoch());
  try {
    await run.settleOpen();
    if (request.ids) await runIds(run, source, request);
    else {
      if (request.filter.idRanges) await requireKnown(source, request.filter.idRanges.ids);
      await runFilter(run, source, request);
    }
    return run.finish();
  } finally {
    await run.close();
  }
}

/**
 * Reads the named ids' rows; throws (exit 3) naming the ids no row has and no audit row removed.
 * Out: the rows, and the ids gone with the audit row that removed each.
 */
async function requireKnown(source: BoundSource, ids: TaskId[]) {
  const rows: Row[] = [];
  for (let i = 0; i < ids.length; i += 1000)
    rows.push(...(await store.tasks.selectWholeRows(source.db, source, ids.slice(i, i + 1000), false)));
  const found = new Set(rows.map((r) => String(rowId(source.sql, r))));
  const missing = ids.filter((id) => !found.has(String(id)));
  const gone = new Map((await removalsOf(source, missing)).map((r) => [r.taskId, r]));
  const unknown = missing.filter((id) => !gone.has(String(id)));
  if (unknown.length) {
    throw usageError(
      `unknown task id${unknown.length > 1 ? 's' : ''} ${unknown.slice(0, 20).join(', ')}${unknown.length > 20 ? ` and ${unknown.length - 20} more` : ''} in ${source.profile.table} (source ${source.name}); nothing was changed`,
      'Check the ids with `taskrecon scan` or `taskrecon show ID`.',
    );
  }
  return { rows, missing, gone };
}

async function runIds(run: Run, source: BoundSource, request: CompensateRequest): Promise<void> {
  const ids = [...new Map((request.ids ?? []).map((id) => [String(id), id])).values()];
  const rule = ACTION_RULES[request.action];
  // Read everything first: one bad id and nothing is written.
  const { rows, missing, gone } = await requireKnown(source, ids);
  run.result.matched = ids.length;
  const decided = run.decideRows(rows);
  const refused = decided.filter((d) => d.item?.outcome === 'refused');
  if (refused.length) {
    for (const d of decided) {
      run.record(
        d.item ?? {
          id: d.id,
          from: d.from,
          to: rule.to,
          outcome: 'skipped',
          reason: 'not changed: other tasks named in this run were refused',
        },
      );
    }
    return;
  }
  for (const id of missing) {
    const removal = gone.get(String(id));
    run.record({
      id,
      from: null,
      to: rule.to,
      outcome: 'already',
      reason: `already ${removal?.action} at ${toIso(removal?.atEpoch)} by ${removal?.operator} (run ${removal?.runId})`,
    });
  }
  const movable = decided.filter((d) => !d.item).map((d) => d.id);
  for (const d of decided) if (d.item) run.record(d.item);
  const size = batchSize(request);
  for (let i = 0; i < movable.length; i += size) {
    if (request.shouldStop?.()) {
      run.result.interrupted = true;
      return;
    }
    await run.batch(movable.slice(i, i + size), 'ids');
    request.onProgress?.(Math.min(i + size, movable.length), movable.length, run.result.applied);
    await run.pace();
  }
}

async function removalsOf(source: BoundSource, ids: TaskId[]) {
  if (ids.length === 0 || !(await source.db.columns('taskrecon_audit'))) return [];
  return store.audit.selectRemovals(source.db, source.db.dialect, source.name, ids.map(String));
}

/** The rows a filtered selection reads: the action's movable statuses (narrowed by --status) and the filters. */
export function selectionWhere(
  source: BoundSource,
  request: Pick<CompensateRequest, 'action' | 'statuses' | 'filter'>,
): Fragment {
  const statuses = selectableStatuses(request.action, request.statuses);
  if (statuses.length === 0) {
    throw usageError(
      `--status ${request.statuses?.join(',')} selects no task that ${request.action} can move (it moves ${ACTION_RULES[request.action].from.join(' or ')} tasks)`,
    );
  }
  return and([source.sql.statusIn(statuses), manualWhere(source, request.filter)]);
}

/** The filter's predicates besides status: the scan filter (error text and queue among them) and id ranges. */
function manualWhere(source: BoundSource, filter: CompensateRequest['filter']): Fragment {
  return and([filterWhere(source.sql, filter), idRangeWhere(source.sql, filter)]);
}

/** The first `limit` tasks a request would act on, for the interactive picker. */
export async function previewCandidates(
  source: BoundSource,
  request: CompensateRequest,
  limit: number,
): Promise<{ tasks: Task[]; matched: number }> {
  checkSupported(source, request.action);
  if (request.ids) {
    const id = source.sql.expr('id') as string;
    const ids = request.ids.slice(0, limit);
    const rows = await store.tasks.selectCandidateTasks(source, inList(id, ids), limit);
    return { tasks: rows.map((r) => source.sql.toTask(r)), matched: request.ids.length };
  }
  const where = selectionWhere(source, request);
  const matched = await store.tasks.countCandidates(source.db, source, where);
  const rows = await store.tasks.selectCandidateTasks(source, where, Math.min(limit, request.limit || limit));
  return {
    tasks: rows.map((r) => source.sql.toTask(r)),
    matched: request.limit ? Math.min(matched, request.limit) : matched,
  };
}

async function runFilter(run: Run, source: BoundSource, request: CompensateRequest): Promise<void> {
  const where = selectionWhere(source, request);
  const count = await store.tasks.countCandidates(source.db, source, where);
  const total = request.limit > 0 ? Math.min(count, request.limit) : count;
  run.result.matched = total;
  const size = batchSize(request);
  // One walk per status along the status index (no sort per page); one walk by id where there is no status column.
  const filters = manualWhere(source, request.filter);
  const walks =
    source.profile.status.kind === 'column'
      ? selectableStatuses(request.action, request.statuses).map((s) =>
          and([source.sql.statusIn([s]), filters]),
        )
      : [where];
  let done = 0;
  for (const walk of walks) {
    let cursor: CandidateCursor | undefined;
    while (done < total) {
      if (request.shouldStop?.()) {
        run.result.interrupted = true;
        return;
      }
      const page = await store.tasks.selectCandidatePage(
        source.db,
        source,
        walk,
        cursor,
        Math.min(size, total - done),
      );
      if (page.ids.length === 0) break;
      await run.batch(page.ids, 'filter');
      done += page.ids.length;
      cursor = page.cursor;
      request.onProgress?.(done, total, run.result.applied);
      await run.pace();
    }
  }
}
