import { LOGICAL_STATUSES, type LogicalStatus, type Task } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store } from '../../db/port/index.js';
import { planFigures, summaryNeedsFullScan, type Figure } from '../../ops/full-scan.js';
import type { CountRow, ListKind } from '../../db/port/index.js';
import {
  ALL_LISTS,
  capabilityNotes,
  DEFAULT_PAGE_SIZE,
  sourceInfo,
  streamList,
  type ScanOptions,
  type SourceInfo,
} from '../../ops/task-lists.js';
import { toIso } from '../../db/task-sql.js';

export {
  ALL_LISTS,
  capabilityNotes,
  DEFAULT_PAGE_SIZE,
  LIST_ORDERS,
  listWhere,
  sourceInfo,
  streamList,
  streamListBatches,
  streamListEncoded,
  wireEncodable,
  type ListOrder,
  type ScanOptions,
  type SourceInfo,
} from '../../ops/task-lists.js';

export type StatusCounts = Record<LogicalStatus, number> & { unknown: number };

export interface BizTypeSummary {
  bizType: string | null;
  total: number;
  byStatus: StatusCounts;
  stuck: number | null;
  due: number | null;
  oldestDueSeconds: number | null;
}

export interface ScanSummary {
  total: number;
  byStatus: StatusCounts;
  stuck: number | null;
  due: number | null;
  oldestDueSeconds: number | null;
  /** Jobs no execution holds and that have not finished (Solid Queue); absent for other tables. */
  orphans?: number;
}

/** The JSON contract of `scan`. */
export interface ScanResult {
  source: SourceInfo;
  now: string;
  stuckAfterSeconds: number;
  summary: ScanSummary;
  byBizType: BizTypeSummary[];
  stuck: Task[];
  due: Task[];
  failed: Task[];
  /** The orphans themselves, as diff lists what is missing (Solid Queue); absent for other tables. */
  orphans?: Task[];
  /** Why a number is null (a column the profile lacks), for humans and scripts alike. */
  notes: string[];
  /** Figures held back because no index serves them on a large table (see --full-scan). */
  skipped?: Figure[];
}

function emptyCounts(): StatusCounts {
  return { pending: 0, processing: 0, success: 0, failed: 0, compensated: 0, unknown: 0 };
}

/**
 * The summary part of a scan: counts by status and biz type, stuck and due as of `now`.
 * Every "now" comparison uses the one cutoff passed in.
 */
export async function scanSummary(
  source: BoundSource,
  options: ScanOptions,
): Promise<Pick<ScanResult, 'summary' | 'byBizType' | 'notes' | 'skipped'>> {
  const capability = capabilityNotes(source);
  const plan =
    options.fullScan === undefined ? undefined : await planFigures(source, options, options.fullScan);
  if (plan && !plan.computes.byStatus) throw summaryNeedsFullScan(source, plan, options);
  const perBizType = plan?.computes.byBizType !== false;
  const stuckCutoff = options.nowEpoch - Math.floor(options.stuckAfterMs / 1000);
  const [counts, due, stuck] = await Promise.all([
    perBizType
      ? store.tasks.countByStatusAndBizType(source, options)
      : store.tasks.countByStatus(source, options),
    capability.due || plan?.computes.due === false
      ? undefined
      : store.tasks.countDue(source, options, options.nowEpoch),
    capability.stuck || plan?.computes.stuck === false
      ? undefined
      : store.tasks.countStuck(source, options, stuckCutoff),
  ]);
  const byBiz = new Map<string | null, BizTypeSummary>();
  const entry = (bizType: string | null): BizTypeSummary => {
    let e = byBiz.get(bizType);
    if (!e) {
      e = {
        bizType,
        total: 0,
        byStatus: emptyCounts(),
        stuck: stuck ? 0 : null,
        due: due ? 0 : null,
        oldestDueSeconds: null,
      };
      byBiz.set(bizType, e);
    }
    return e;
  };
  const summary: ScanSummary = {
    total: 0,
    byStatus: emptyCounts(),
    stuck: stuck ? 0 : null,
    due: due ? 0 : null,
    oldestDueSeconds: null,
  };
  for (const row of counts) {
    const status = source.sql.logicalStatus(row.rawStatus);
    const e = entry(row.bizType);
    e.total += row.count;
    e.byStatus[status] += row.count;
    summary.total += row.count;
    summary.byStatus[status] += row.count;
  }
  const age = (r: CountRow) =>
    r.oldestEpoch === null ? null : Math.max(0, options.nowEpoch - r.oldestEpoch);
  for (const row of due ?? []) {
    const e = entry(row.bizType);
    e.due = row.count;
    e.oldestDueSeconds = age(row);
    summary.due = (summary.due ?? 0) + row.count;
    summary.oldestDueSeconds = Math.max(summary.oldestDueSeconds ?? 0, age(row) ?? 0);
  }
  if (summary.due === 0) summary.oldestDueSeconds = null;
  for (const row of stuck ?? []) {
    entry(row.bizType).stuck = row.count;
    summary.stuck = (summary.stuck ?? 0) + row.count;
  }
  const notes = [capability.stuck, capability.due].filter((n): n is string => Boolean(n));
  notes.push(...(plan?.notes ?? []));
  if (source.sql.orphanWhere()) {
    // A job no execution holds is the one state such a table does not map: lost, not unknown.
    summary.orphans = summary.byStatus.unknown;
    if (summary.orphans > 0)
      notes.push(
        `${summary.orphans} jobs are held by no execution and have not finished: orphans no worker will run (listed under orphans)`,
      );
  } else if (summary.byStatus.unknown > 0) {
    notes.push(`${summary.byStatus.unknown} rows have a status value the profile does not map (see doctor)`);
  }
  const byBizType = [...byBiz.values()].sort(
    (a, b) => b.total - a.total || String(a.bizType).localeCompare(String(b.bizType)),
  );
  if (!perBizType) return { summary, byBizType: [], notes, skipped: plan?.skipped };
  return { summary, byBizType, notes, ...(plan?.skipped.length ? { skipped: plan.skipped } : {}) };
}

/** A whole scan, lists collected (use streamList for unbounded output). */
export async function scan(source: BoundSource, options: ScanOptions): Promise<ScanResult> {
  const head = await scanSummary(source, options);
  const lists: Record<ListKind, Task[]> = { stuck: [], due: [], failed: [] };
  // The lists are read side by side, each on a connection of the pool the summary opened.
  const [orphans] = await Promise.all([
    orphanList(source, options),
    ...(options.lists ?? ALL_LISTS).map(async (kind) => {
      const rows = streamList(source, kind, options);
      if (rows) for await (const row of rows) lists[kind].push(source.sql.toTask(row));
    }),
  ]);
  return {
    source: sourceInfo(source),
    now: toIso(options.nowEpoch) as string,
    stuckAfterSeconds: Math.floor(options.stuckAfterMs / 1000),
    ...head,
    ...lists,
    ...(orphans ? { orphans } : {}),
  };
}

/** The orphans of a job table kept by executions, up to the list limit; undefined for other tables. */
async function orphanList(source: BoundSource, options: ScanOptions): Promise<Task[] | undefined> {
  const where = source.sql.orphanWhere();
  if (!where) return undefined;
  const out: Task[] = [];
  for await (const row of store.tasks.listRows(
    source,
    where,
    options.limit,
    options.pageSize ?? DEFAULT_PAGE_SIZE,
  ))
    out.push(source.sql.toTask(row));
  return out;
}

export { LOGICAL_STATUSES };
