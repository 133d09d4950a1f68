import { setTimeout as sleep } from 'node:timers/promises';
import type { LogicalStatus, Task, TaskId } from '../core/task.js';
import type { BoundSource } from '../db/bind-source.js';
import { insertAuditBatch, selectRemovals, type AuditInsert } from '../db/sql/audit.js';
import {
  countCandidates,
  deleteGuarded,
  errorAndQueueWhere,
  selectCandidatePage,
  type CandidateCursor,
  selectCandidateTasks,
  selectWholeRows,
  selectWrittenColumns,
  type ManualFilter,
} from '../db/sql/manual.js';
import type { Fragment } from '../db/task-sql.js';
import { and, filterWhere } from '../db/sql/scan.js';
import { applyTransition } from '../db/sql/transitions.js';
import type { Queryable, Row } from '../db/types.js';
import { toIso } from '../db/task-sql.js';
import {
  FailedJobRequeuer,
  type QueueConnectionConfig,
  type QueueFlavor,
  type Requeued,
  type RequeuePlan,
} from '../dispatch/failed-job-queue.js';
import { laravelQueue } from '../dispatch/laravel-queue.js';
import { thinkphpQueue } from '../dispatch/thinkphp-queue.js';
import { TaskreconError, usageError } from '../errors.js';
import { requireAuditTable } from './audit.js';
import {
  ACTION_RULES,
  actionUnsupported,
  decide,
  DELETED,
  pacing,
  selectableStatuses,
  type CompensateAction,
} from './compensate-plan.js';
import { rowEventId, rowId, rowJson, rowStatus } from './compensate-rows.js';
import { sourceInfo, type SourceInfo } from './scan.js';

/**
 * Manual compensation (seed 000 §3.5, SPEC §3 `compensate`): moves selected tasks through the state
 * machine by hand, each change a guarded write with its audit row in the same transaction.
 *
 * Bulk runs go a batch at a time in id order. Each batch locks its rows, re-checks their state,
 * writes, audits and commits; a row another run moved first is skipped, never moved twice. So an
 * interrupted run continued later (the same command again) redoes nothing: moved rows no longer
 * match, and the rows of the batch that was cut short were rolled back whole.
 */

/** `skipped`: held back, unchanged, because other tasks named in the same run were refused. */
export type CompensateOutcome = 'applied' | 'would-apply' | 'already' | 'refused' | 'lost-race' | 'skipped';

export interface CompensateItem {
  id: TaskId;
  from: string | null;
  to: string | null;
  outcome: CompensateOutcome;
  /** Why it was not applied, in words an operator acts on. */
  reason?: string;
}

/** The JSON contract of `compensate` (SPEC §3), plus what a script needs to follow up. */
export interface CompensateResult {
  action: CompensateAction;
  operator: string;
  dryRun: boolean;
  matched: number;
  applied: number;
  skipped: number;
  refused: number;
  runId: string;
  source: SourceInfo;
  interrupted: boolean;
  durationMs: number;
  results: CompensateItem[];
  /** Items beyond MAX_KEPT_RESULTS are counted here, not listed (the audit log has every change: `audit --run RUNID`). */
  resultsOmitted: number;
}

export interface CompensateRequest {
  action: CompensateAction;
  operator: string;
  host: string;
  reason: string | null;
  dryRun: boolean;
  runId: string;
  /** Explicit task ids; otherwise `filter` selects. */
  ids?: TaskId[];
  statuses?: LogicalStatus[];
  filter: ManualFilter;
  /** At most this many rows; 0 = every match. */
  limit: number;
  /** Rows per second; undefined = as fast as the database goes. */
  rate?: number;
  batchSize?: number;
  queueConnections?: Record<string, QueueConnectionConfig>;
  /** Polled between batches: true stops the run after the batch in hand (SIGINT). */
  shouldStop?: () => boolean;
  onProgress?: (done: number, total: number, applied: number) => void;
}

export const MAX_KEPT_RESULTS = 1000;
export const DEFAULT_BATCH = 250;

/** Picks the framework a failed-jobs profile belongs to. */
function flavorOf(source: BoundSource): QueueFlavor | undefined {
  if (source.profile.name.startsWith('laravel')) return laravelQueue;
  if (source.profile.name.startsWith('thinkphp')) return thinkphpQueue;
  return undefined;
}

class Run {
  readonly result: CompensateResult;
  private readonly started = Date.now();
  private requeuer: FailedJobRequeuer | undefined;
  private processed = 0;

  constructor(
    private readonly source: BoundSource,
    private readonly request: CompensateRequest,
    private readonly nowEpoch: number,
  ) {
    this.result = {
      action: request.action,
      operator: request.operator,
      dryRun: request.dryRun,
      matched: 0,
      applied: 0,
      skipped: 0,
      refused: 0,
      runId: request.runId,
      source: sourceInfo(source),
      interrupted: false,
      durationMs: 0,
      results: [],
      resultsOmitted: 0,
    };
    if (source.profile.kind === 'failed-jobs' && request.action === 'retry') {
      const flavor = flavorOf(source);
      if (!flavor)
        throw usageError(
          `profile ${source.profile.name} is a failed-jobs table of no known framework: cannot re-push its jobs`,
        );
      this.requeuer = new FailedJobRequeuer(flavor, source.name, source.db, request.queueConnections ?? {});
    }
  }

  record(item: CompensateItem): void {
    if (item.outcome === 'applied') this.result.applied++;
    else if (item.outcome !== 'would-apply') this.result.skipped++;
    if (item.outcome === 'refused') this.result.refused++;
    if (this.result.results.length < MAX_KEPT_RESULTS) this.result.results.push(item);
    else this.result.resultsOmitted++;
  }

  /** Decides for each whole row; with `plan`, also plans the re-push of failed jobs. */
  decideRows(rows: Row[]): Array<{
    row: Row;
    id: TaskId;
    from: LogicalStatus | 'unknown';
    item?: CompensateItem;
    push?: RequeuePlan;
  }> {
    const { sql } = this.source;
    const rule = ACTION_RULES[this.request.action];
    return rows.map((row) => {
      const id = rowId(sql, row);
      const status = rowStatus(sql, row);
      const decision = decide(this.request.action, status);
      if (decision.kind === 'already')
        return {
          row,
          id,
          from: status,
          item: { id, from: status, to: rule.to, outcome: 'already', reason: decision.reason },
        };
      if (decision.kind === 'refused')
        return {
          row,
          id,
          from: status,
          item: { id, from: status, to: rule.to, outcome: 'refused', reason: decision.reason },
        };
      if (this.requeuer) {
        const plan = this.requeuer.plan(row, this.nowEpoch);
        if ('refused' in plan)
          return {
            row,
            id,
            from: status,
            item: { id, from: status, to: rule.to, outcome: 'refused', reason: plan.refused },
          };
        return { row, id, from: status, push: plan };
      }
      return { row, id, from: status };
    });
  }

  /** One batch: lock, re-check, write, audit, commit (or, in a dry run, read and decide). */
  async batch(ids: readonly TaskId[], mode: 'ids' | 'filter'): Promise<void> {
    const { source, request } = this;
    const rule = ACTION_RULES[request.action];
    if (request.dryRun) {
      const rows = await selectWholeRows(source.db, source, ids, false);
      for (const d of this.decideRows(rows))
        this.record(d.item ?? { id: d.id, from: d.from, to: rule.to, outcome: 'would-apply' });
      this.processed += ids.length;
      return;
    }
    const items = await source.db.transaction(async (tx) => {
      const rows = await selectWholeRows(tx, source, ids, true);
      const found = new Set(rows.map((r) => String(rowId(source.sql, r))));
      const out: CompensateItem[] = ids
        .filter((id) => !found.has(String(id)))
        .map((id) => ({
          id,
          from: null,
          to: rule.to,
          outcome: 'lost-race' as const,
          reason: 'the row is gone (another run or worker removed it)',
        }));
      const decided = this.decideRows(rows);
      const movers = decided.filter((d) => !d.item);
      for (const d of decided) {
        if (!d.item) continue;
        // Selected by filter in a movable state, now elsewhere: someone else moved it first.
        if (mode === 'filter' && d.item.outcome !== 'refused')
          out.push({ ...d.item, outcome: 'lost-race', reason: `${d.item.reason}: moved meanwhile` });
        else out.push(d.item);
      }
      if (movers.length === 0) return out;
      const moverIds = movers.map((m) => m.id);
      const requeued = await this.write(
        tx,
        moverIds,
        movers.flatMap((m) => (m.push ? [m.push] : [])),
      );
      const written =
        rule.to === DELETED || this.requeuer ? [] : await selectWrittenColumns(tx, source, moverIds);
      const afterById = new Map(written.map((r) => [String(rowId(source.sql, r)), r]));
      const audit: AuditInsert[] = movers.map((m) => ({
        operator: request.operator,
        host: request.host,
        action: request.action,
        source: source.name,
        taskTable: source.profile.table,
        taskId: String(m.id),
        eventId: rowEventId(source.sql, m.row),
        fromStatus: m.from,
        toStatus: rule.to,
        beforeJson: rowJson(m.row),
        afterJson: afterImage(m.row, afterById.get(String(m.id)), requeued.get(m.id)),
        reason: request.reason,
        runId: request.runId,
      }));
      await insertAuditBatch(tx, source.db.dialect, audit);
      for (const m of movers) out.push({ id: m.id, from: m.from, to: rule.to, outcome: 'applied' });
      return out;
    });
    const order = new Map(ids.map((id, index) => [String(id), index]));
    items.sort((a, b) => (order.get(String(a.id)) ?? 0) - (order.get(String(b.id)) ?? 0));
    for (const item of items) this.record(item);
    this.processed += ids.length;
  }

  /** The guarded write of the movers; a count short of the locked rows means the guard failed: roll back. */
  private async write(tx: Queryable, ids: TaskId[], pushes: RequeuePlan[]): Promise<Map<TaskId, Requeued>> {
    const { source, request } = this;
    const rule = ACTION_RULES[request.action];
    let changed: number;
    let requeued = new Map<TaskId, Requeued>();
    if (rule.to === DELETED || this.requeuer) {
      changed = await deleteGuarded(tx, source, ids, rule.from);
      if (changed === ids.length && this.requeuer) requeued = await this.requeuer.push(tx, pushes);
    } else {
      changed = await applyTransition(tx, source, {
        transition: rule.transition as NonNullable<typeof rule.transition>,
        id: ids,
        ...(request.action === 'retry' ? { attempts: 0, nextRetryAt: 'now' as const } : {}),
      });
    }
    if (changed !== ids.length) {
      throw new TaskreconError(
        `the guarded write changed ${changed} of ${ids.length} locked rows; the batch was rolled back`,
        {
          code: 'GUARD',
          hint: 'Another writer bypassed row locks; run the command again: it redoes nothing already done.',
        },
      );
    }
    return requeued;
  }

  /** Paces the run to `rate` rows per second, cumulatively (a slow batch is not punished twice). */
  async pace(): Promise<void> {
    const rate = this.request.rate;
    if (!rate) return;
    const due = this.started + (this.processed / rate) * 1000;
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait);
  }

  finish(): CompensateResult {
    this.result.durationMs = Date.now() - this.started;
    return this.result;
  }

  async close(): Promise<void> {
    await this.requeuer?.close();
  }
}

function afterImage(before: Row, written: Row | undefined, requeued: Requeued | undefined): string | null {
  if (requeued) return JSON.stringify({ requeued });
  return written ? rowJson({ ...before, ...written }) : null;
}

/** How many rows go in one batch: the rate's share of a fifth of a second, capped. */
function batchSize(request: CompensateRequest): number {
  return pacing(request.rate, request.batchSize ?? DEFAULT_BATCH).batch;
}

/** Checks the action against the table before anything is read or written. */
export function checkSupported(source: BoundSource, action: CompensateAction): void {
  const why = actionUnsupported(action, {
    profile: source.profile.name,
    kind: source.profile.kind,
    statuses: source.sql.statuses(),
  });
  if (why) throw usageError(`cannot ${action} on source ${source.name}: ${why}`);
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
    if (request.ids) await runIds(run, source, request);
    else await runFilter(run, source, request);
    return run.finish();
  } finally {
    await run.close();
  }
}

async function runIds(run: Run, source: BoundSource, request: CompensateRequest): Promise<void> {
  const ids = [...new Map((request.ids ?? []).map((id) => [String(id), id])).values()];
  const rule = ACTION_RULES[request.action];
  // Read everything first: one bad id and nothing is written.
  const rows: Row[] = [];
  for (let i = 0; i < ids.length; i += 1000)
    rows.push(...(await selectWholeRows(source.db, source, ids.slice(i, i + 1000), false)));
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
  return selectRemovals(source.db, source.db.dialect, source.name, ids.map(String));
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
  return and([
    source.sql.statusIn(statuses),
    filterWhere(source.sql, request.filter),
    errorAndQueueWhere(source.sql, request.filter),
  ]);
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
    const rows = await selectCandidateTasks(
      source,
      { sql: `${id} IN (${ids.map(() => '?').join(', ')})`, params: ids },
      limit,
    );
    return { tasks: rows.map((r) => source.sql.toTask(r)), matched: request.ids.length };
  }
  const where = selectionWhere(source, request);
  const matched = await countCandidates(source.db, source, where);
  const rows = await selectCandidateTasks(source, where, Math.min(limit, request.limit || limit));
  return {
    tasks: rows.map((r) => source.sql.toTask(r)),
    matched: request.limit ? Math.min(matched, request.limit) : matched,
  };
}

async function runFilter(run: Run, source: BoundSource, request: CompensateRequest): Promise<void> {
  const where = selectionWhere(source, request);
  const count = await countCandidates(source.db, source, where);
  const total = request.limit > 0 ? Math.min(count, request.limit) : count;
  run.result.matched = total;
  const size = batchSize(request);
  // One walk per status along the status index (no sort per page); one walk by id where there is no status column.
  const filters = and([
    filterWhere(source.sql, request.filter),
    errorAndQueueWhere(source.sql, request.filter),
  ]);
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
      const page = await selectCandidatePage(source.db, source, walk, cursor, Math.min(size, total - done));
      if (page.ids.length === 0) break;
      await run.batch(page.ids, 'filter');
      done += page.ids.length;
      cursor = page.cursor;
      request.onProgress?.(done, total, run.result.applied);
      await run.pace();
    }
  }
}
