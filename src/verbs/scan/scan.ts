import { LOGICAL_STATUSES, type LogicalStatus, type Task } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import {
  store,
  and,
  dueWhere,
  filterWhere,
  LIST_STATUS,
  stuckWhere,
  type CountRow,
  type ListEncoder,
  type ListKind,
  type ScanFilter,
} from '../../db/port/index.js';
import { planFigures, summaryNeedsFullScan, type Figure } from './full-scan.js';
import { toIso } from '../../db/task-sql.js';

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
}

export interface SourceInfo {
  name: string;
  profile: string;
  table: string;
  db: string;
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
  /** Why a number is null (a column the profile lacks), for humans and scripts alike. */
  notes: string[];
  /** Figures held back because no index serves them on a large table (see --full-scan). */
  skipped?: Figure[];
}

export interface ScanOptions extends ScanFilter {
  nowEpoch: number;
  stuckAfterMs: number;
  /** Rows per list; 0 lists every row. */
  limit: number;
  /** Which lists to fill (default all three). */
  lists?: ListKind[];
  /**
   * false: on a large table, hold back the figures no index serves (and say so); true: read the
   * whole table for them. Undefined computes every figure without asking (small embedded uses).
   */
  fullScan?: boolean;
  pageSize?: number;
}

export const ALL_LISTS: ListKind[] = ['stuck', 'due', 'failed'];
/**
 * Rows per keyset page. Each page is one statement streamed in constant memory, so a page can be
 * large: every page costs a fresh index dive and statement start (measured ≈0.1–0.2 s on a busy
 * 2-core server), while a page still ends within seconds, so no statement holds a read view long.
 */
export const DEFAULT_PAGE_SIZE = 100_000;

export function sourceInfo(source: BoundSource): SourceInfo {
  return {
    name: source.name,
    profile: source.profile.name,
    table: source.profile.table,
    db: source.db.display,
  };
}

function emptyCounts(): StatusCounts {
  return { pending: 0, processing: 0, success: 0, failed: 0, compensated: 0, unknown: 0 };
}

/** What the profile lacks for stuck and due, as notes; undefined entries mean computable. */
export function capabilityNotes(source: BoundSource): { stuck?: string; due?: string } {
  const { sql, profile } = source;
  const statuses = sql.statuses();
  const notes: { stuck?: string; due?: string } = {};
  if (!statuses.includes('processing'))
    notes.stuck = `${profile.name} rows are never processing: stuck is n/a`;
  else if (!sql.has('updatedAt')) notes.stuck = `${profile.name} has no updated_at column: stuck is n/a`;
  if (!statuses.includes('pending'))
    notes.due = `${profile.name} rows are never pending: due is n/a (retry them with \`taskrecon compensate\`)`;
  else if (!sql.has('nextRetryAt')) notes.due = `${profile.name} has no next-retry column: due is n/a`;
  return notes;
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
  if (summary.byStatus.unknown > 0) {
    notes.push(`${summary.byStatus.unknown} rows have a status value the profile does not map (see doctor)`);
  }
  const byBizType = [...byBiz.values()].sort(
    (a, b) => b.total - a.total || String(a.bizType).localeCompare(String(b.bizType)),
  );
  if (!perBizType) return { summary, byBizType: [], notes, skipped: plan?.skipped };
  return { summary, byBizType, notes, ...(plan?.skipped.length ? { skipped: plan.skipped } : {}) };
}

/** The WHERE of one list, or undefined when the profile cannot have it. */
export function listWhere(source: BoundSource, kind: ListKind, options: ScanOptions) {
  const capability = capabilityNotes(source);
  const filter = filterWhere(source.sql, options);
  if (kind === 'due')
    return capability.due ? undefined : and([dueWhere(source.sql, options.nowEpoch), filter]);
  if (kind === 'stuck') {
    return capability.stuck
      ? undefined
      : and([stuckWhere(source.sql, options.nowEpoch - Math.floor(options.stuckAfterMs / 1000)), filter]);
  }
  return and([source.sql.statusIn([LIST_STATUS[kind]]), filter]);
}

/** Streams one list's rows (arrays in taskSelect order). */
export function streamList(
  source: BoundSource,
  kind: ListKind,
  options: ScanOptions,
): AsyncGenerator<unknown[]> | undefined {
  const where = listWhere(source, kind, options);
  if (!where) return undefined;
  return store.tasks.listRows(source, where, options.limit, options.pageSize ?? DEFAULT_PAGE_SIZE, {
    nullNextRetry: kind !== 'due',
  });
}

/** Streams one list's rows in batches (the fast path of `scan --format ndjson|csv`). */
export function streamListBatches(
  source: BoundSource,
  kind: ListKind,
  options: ScanOptions,
): AsyncGenerator<unknown[][]> | undefined {
  const where = listWhere(source, kind, options);
  if (!where) return undefined;
  return store.tasks.listBatches(source, where, options.limit, options.pageSize ?? DEFAULT_PAGE_SIZE, {
    nullNextRetry: kind !== 'due',
  });
}

/** Streams one list's rows encoded from the wire (needs `db.streamEncoded`): chunks of output bytes. */
export function streamListEncoded(
  source: BoundSource,
  kind: ListKind,
  options: ScanOptions,
  encoder: ListEncoder,
): AsyncGenerator<Buffer> | undefined {
  const where = listWhere(source, kind, options);
  if (!where) return undefined;
  return store.tasks.listEncoded(
    source,
    where,
    options.limit,
    options.pageSize ?? DEFAULT_PAGE_SIZE,
    encoder,
    {
      nullNextRetry: kind !== 'due',
    },
  );
}

/** A whole scan, lists collected (use streamList for unbounded output). */
export async function scan(source: BoundSource, options: ScanOptions): Promise<ScanResult> {
  const head = await scanSummary(source, options);
  const lists: Record<ListKind, Task[]> = { stuck: [], due: [], failed: [] };
  for (const kind of options.lists ?? ALL_LISTS) {
    const rows = streamList(source, kind, options);
    if (!rows) continue;
    for await (const row of rows) lists[kind].push(source.sql.toTask(row));
  }
  return {
    source: sourceInfo(source),
    now: toIso(options.nowEpoch) as string,
    stuckAfterSeconds: Math.floor(options.stuckAfterMs / 1000),
    ...head,
    ...lists,
  };
}

export { LOGICAL_STATUSES };
