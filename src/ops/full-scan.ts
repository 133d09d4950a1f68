import type { BoundSource } from '../db/bind-source.js';
import { columnOf, statusColumnOf } from '../db/profiles/types.js';
import { store } from '../db/port/index.js';
import type { ScanFilter } from '../db/fragment.js';
import { windowField } from '../db/fragment.js';
import type { IndexInfo } from '../db/types.js';
import { TaskreconError } from '../errors.js';
import { grouped } from '../core/grouped.js';

/**
 * Which summary figures an index can answer, and which would read the whole table. On a table the
 * engine estimates at FULL_SCAN_FREE_ROWS rows or more, a figure no index serves is held back (with
 * a note saying which index would serve it) unless the operator asks for the full read with
 * `--full-scan`: a cron job must not read a 50M-row primary end to end every minute without
 * anyone having decided it should.
 */

/** Below this many rows a whole read takes a fraction of a second: every figure is computed. */
export const FULL_SCAN_FREE_ROWS = 100_000;

/** An index doctor recommends for the summary figures, and why. */
export interface RecommendedIndex {
  name: string;
  columns: string[];
  /** The first two columns serve in either order (a GROUP BY of both); the rest must follow in order. */
  anyOrder: boolean;
  why: string;
}

export type Figure = 'byStatus' | 'byBizType' | 'due' | 'stuck' | 'window';

/** The figures of a scan summary, and of a report. */
export const SCAN_FIGURES: readonly Figure[] = ['byStatus', 'byBizType', 'due', 'stuck'];
export const REPORT_FIGURES: readonly Figure[] = ['window', 'due', 'stuck'];

export interface FigurePlan {
  /** Figures to compute. */
  computes: Record<Figure, boolean>;
  /** Figures held back because they would read the whole table. */
  skipped: Figure[];
  notes: string[];
  estimatedRows: number;
}

const lower = (s: string) => s.toLowerCase();

/**
 * Whether `index` starts with `columns`, in that order; with `anyOrder`, the first two of them may
 * come in either order (the rest follow in order).
 */
export function indexServes(index: IndexInfo, columns: string[], anyOrder = false): boolean {
  const head = index.columns.slice(0, columns.length).map(lower);
  const want = columns.map(lower);
  if (head.length < want.length) return false;
  if (!anyOrder) return want.every((c, i) => head[i] === c);
  const pair = want.slice(0, 2);
  return pair.every((c) => head.slice(0, 2).includes(c)) && want.slice(2).every((c, i) => head[i + 2] === c);
}

/** The indexes the index-served summary and report read through, for this profile. */
export function recommendedIndexes(source: BoundSource): RecommendedIndex[] {
  const { profile } = source;
  const out: RecommendedIndex[] = [];
  const status = profile.status.kind === 'column' ? profile.status.column : undefined;
  const bizType = columnOf(profile, 'bizType');
  if (status && bizType) {
    // The times make it cover the due and stuck counts too: on a table far larger than the buffer
    // pool, each row looked up for its biz type is a random page read (measured: 30k due rows took
    // 2.6 s through (status, next_retry_time) and 27 ms through this index).
    const times = (['nextRetryAt', 'updatedAt'] as const)
      .map((f) => columnOf(profile, f))
      .filter((c): c is string => c !== undefined);
    out.push({
      name: 'idx_status_biz_type',
      columns: [status, bizType, ...times],
      anyOrder: true,
      why: `scan's per-biz-type counts read one index entry per row instead of the whole table, and the due, stuck and failed-open counts read only the ${status} range they need without touching a row`,
    });
  }
  const window = windowField(source.sql);
  const windowColumn = window ? columnOf(profile, window) : undefined;
  if (windowColumn && profile.kind !== 'queue-jobs') {
    out.push({
      name: `idx_${windowColumn}`,
      columns: [windowColumn],
      anyOrder: false,
      why: `report's window (and scan --since/--until) reads only the rows ${profile.kind === 'failed-jobs' ? 'that failed' : 'created'} in the window`,
    });
  }
  return out;
}

/** The CREATE INDEX of a recommendation. */
export function createIndexSql(source: BoundSource, index: RecommendedIndex): string {
  return store.doctor.createIndexStatement(
    source.db.dialect,
    index.name,
    source.profile.table,
    index.columns,
    true,
  );
}

/** Which figures of a scan summary (or a report) are index-served on this table, and what to do about the others. */
export async function planFigures(
  source: BoundSource,
  filter: ScanFilter,
  allowFullScan: boolean,
  wanted: readonly Figure[] = SCAN_FIGURES,
): Promise<FigurePlan> {
  const all: Record<Figure, boolean> = {
    byStatus: true,
    byBizType: true,
    due: true,
    stuck: true,
    window: true,
  };
  const rows = allowFullScan ? 0 : await store.tasks.estimatedRows(source);
  if (rows < FULL_SCAN_FREE_ROWS) return { computes: all, skipped: [], notes: [], estimatedRows: rows };
  const { profile } = source;
  const indexes = await source.db.indexes(profile.table);
  const has = (columns: string[], anyOrder = false) => indexes.some((i) => indexServes(i, columns, anyOrder));
  const status = statusColumnOf(profile);
  const bizType = columnOf(profile, 'bizType');
  const window = windowField(source.sql);
  const windowColumn = window ? columnOf(profile, window) : undefined;
  const windowed = filter.sinceEpoch !== undefined || filter.untilEpoch !== undefined;
  const windowServed = windowColumn !== undefined && has([windowColumn]);
  const statusServed = status === undefined || has([status]);
  const computes: Record<Figure, boolean> = {
    byStatus: windowed ? windowServed : statusServed,
    byBizType: windowed
      ? windowServed
      : !source.sql.has('bizType') ||
        (status === undefined ? false : bizType !== undefined && has([status, bizType], true)),
    due: statusServed,
    stuck: statusServed,
    window: windowServed,
  };
  if (status === undefined && !windowed && source.sql.has('bizType')) {
    // Every row has one status: the per-biz-type counts are a GROUP BY of the biz type alone.
    computes.byBizType = bizType !== undefined && has([bizType]);
  }
  const skipped = wanted.filter((f) => !computes[f]);
  const approx = `~${grouped(rows)} rows`;
  const recommended = recommendedIndexes(source);
  const create = (columns: string[]) => {
    const r = recommended.find((i) => columns.every((c) => i.columns.includes(c)));
    return r ? ` (${createIndexSql(source, r)})` : '';
  };
  const notes: string[] = [];
  if (wanted.includes('byBizType') && !computes.byBizType && computes.byStatus) {
    notes.push(
      bizType && status
        ? `per-biz-type counts skipped: without an index on (${status}, ${bizType}) they read the whole ${profile.table} table (${approx})${create([status, bizType])}; --full-scan reads it anyway`
        : `per-biz-type counts skipped: ${profile.name}'s biz type is not a column an index can hold, so they read the whole ${profile.table} table (${approx}); --full-scan reads it anyway`,
    );
  }
  if (wanted.includes('window') && !computes.window)
    notes.push(
      `the window's figures (created, succeeded, failed, failure rate, latency) skipped: without an index on (${windowColumn ?? 'created_at'}) they read the whole ${profile.table} table (${approx})${windowColumn ? create([windowColumn]) : ''}; --full-scan reads it anyway`,
    );
  if (!computes.due || !computes.stuck)
    notes.push(
      `due and stuck skipped: without an index leading with ${status} they read the whole ${profile.table} table (${approx}); --full-scan reads it anyway`,
    );
  return { computes, skipped, notes, estimatedRows: rows };
}

/** The summary cannot be given at all without reading the whole table: exit 3 with what would serve it. */
export function summaryNeedsFullScan(
  source: BoundSource,
  plan: FigurePlan,
  filter: ScanFilter,
): TaskreconError {
  const { profile } = source;
  const windowed = filter.sinceEpoch !== undefined || filter.untilEpoch !== undefined;
  const window = windowField(source.sql);
  const column = windowed
    ? ((window && columnOf(profile, window)) ?? 'the window column')
    : (statusColumnOf(profile) ?? 'the status');
  return new TaskreconError(
    `the counts by status would read the whole ${profile.table} table (~${grouped(plan.estimatedRows)} rows): no index leads with ${column}`,
    {
      code: 'FULL_SCAN',
      hint: `Create an index on (${column}) (taskrecon doctor prints the CREATE INDEX), or pass --full-scan to read the whole table anyway (on a replica: --read-db).`,
    },
  );
}
