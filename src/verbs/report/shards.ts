import type { TaskreconConfig } from '../../config/schema.js';
import {
  combineMetrics,
  failingBizTypes,
  type BizTypeReport,
  type NowRow,
  type ReportResult,
  type WindowRow,
} from '../../core/report.js';
import { commonCapabilities, keepCommon, mergeShardReportRows } from '../../core/report-shards.js';
import {
  buildTrend,
  mergeTrendRows,
  trendStart,
  TREND_SPAN_NAMES,
  TREND_SPANS,
  type Trend,
  type TrendSpan,
} from '../../core/trend.js';
import { store } from '../../db/port/index.js';
import { toIso } from '../../db/task-sql.js';
import { sourceInfo } from '../../ops/task-lists.js';
import { eachShard, OPEN_CONCURRENCY, shardsWhere, type ShardSet } from '../../ops/shards/set.js';
import { planFigures, REPORT_FIGURES, type Figure, type FigurePlan } from '../../ops/full-scan.js';
import { boundedAll } from '../../core/shards.js';
import { sweepCounts, sweepFigures } from '../../ops/sweep/figures.js';
import { DEFAULT_SAMPLES, finishReport, reportInputs, type ReportOptions } from './report.js';

/** One shard in a sharded report: reached or not, and its own as-of-now figures. */
export interface ShardReportEntry {
  name: string;
  ok: boolean;
  now?: string;
  due?: number | null;
  stuck?: number | null;
  failedOpen?: number | null;
  error?: string;
}

export type ShardedReport = Omit<ReportResult, 'notifications'> & {
  shards: ShardReportEntry[];
  missingShards?: string[];
};

/**
 * Every shard's plan of the figures (its estimated rows and indexes, read first and side by side),
 * made common: a figure one shard holds back is held back on every shard, so no shard reads the
 * rows of a figure the report cannot show (a sum over some shards is no figure of the source).
 * Undefined when the report does not plan (no full-scan guard asked).
 */
async function commonPlans(
  set: ShardSet,
  options: Omit<ReportOptions, 'nowEpoch'>,
): Promise<Map<string, FigurePlan> | undefined> {
  const { fullScan } = options;
  if (fullScan === undefined) return undefined;
  const own = await boundedAll(set.shards, Math.max(set.concurrency, OPEN_CONCURRENCY), async (shard) => ({
    name: shard.spec.name,
    plan: await planFigures(shard.source, { bizTypes: options.bizTypes }, fullScan, REPORT_FIGURES),
  }));
  const computes = { ...(own[0]?.plan.computes as FigurePlan['computes']) };
  for (const { plan } of own)
    for (const figure of Object.keys(computes) as Figure[]) computes[figure] &&= plan.computes[figure];
  const skipped = REPORT_FIGURES.filter((f) => !computes[f]);
  return new Map(own.map(({ name, plan }) => [name, { ...plan, computes: { ...computes }, skipped }]));
}

/** How many of a shard's failing biz types it reads the latest failure of, per sample the report shows. */
const PREFETCH_FACTOR = 2;

type Sample = BizTypeReport['sample'];

/** The biz types with failures on one shard (in the window, or failed and open), the most first. */
function failingOn(rows: { window: WindowRow[]; failedOpen: NowRow[] }): (string | null)[] {
  const failures = new Map<string | null, number>();
  const add = (bizType: string | null, n: number) => {
    if (n > 0) failures.set(bizType, (failures.get(bizType) ?? 0) + n);
  };
  for (const r of rows.window) add(r.bizType, r.failed);
  for (const r of rows.failedOpen) add(r.bizType, r.count);
  return [...failures].sort((a, b) => b[1] - a[1]).map(([bizType]) => bizType);
}

const total = (rows: { count: number }[], can: boolean): number | null =>
  can ? rows.reduce((sum, r) => sum + r.count, 0) : null;

/**
 * The report of a sharded source: every shard's statements (each against its own clock, the
 * latency as a histogram), merged into the rows of one table, then combined and judged as one
 * table's are. Each shard's own due, stuck and failed-open counts are kept beside the total.
 */
export async function buildShardReport(
  set: ShardSet,
  options: Omit<ReportOptions, 'nowEpoch'>,
): Promise<ShardedReport> {
  const limit = options.samples ?? DEFAULT_SAMPLES;
  const plans = await commonPlans(set, options);
  const parts = await eachShard(set, async ({ spec, source }) => {
    const nowEpoch = await source.db.nowEpoch();
    const rows = await reportInputs(source, { ...options, nowEpoch }, true, plans?.get(spec.name));
    // The latest failure of the biz types failing on this shard, read with its other statements
    // (not once every shard is done): the report's failing biz types are among them.
    const latest = new Map<string | null, Sample>();
    for (const bizType of failingOn(rows).slice(0, limit * PREFETCH_FACTOR)) {
      const s = await store.tasks.latestFailure(source, bizType);
      latest.set(bizType, s ? { ...s, id: `${spec.name}:${s.id}` } : null);
    }
    return { spec, source, nowEpoch, rows, latest };
  });
  const first = parts[0];
  if (!first) throw new Error('no shard answered');
  const nowEpoch = Math.max(...parts.map((p) => p.nowEpoch));
  const capabilities = commonCapabilities(parts.map((p) => p.rows.capabilities));
  const merged = mergeShardReportRows(
    parts.map((p) => keepCommon({ nowEpoch: p.nowEpoch, ...p.rows }, capabilities)),
    nowEpoch,
  );
  const { metrics, byBizType } = combineMetrics({ nowEpoch, capabilities, ...merged });
  const failing = failingBizTypes(byBizType, limit);
  const read = new Map(parts.map((p) => [p.spec.name, p.latest]));
  await Promise.all(
    failing.map(async (b) => {
      const samples = await eachShard(set, async ({ spec, source }) => {
        const known = read.get(spec.name);
        if (known?.has(b.bizType)) return known.get(b.bizType) as Sample;
        const s = await store.tasks.latestFailure(source, b.bizType);
        return s ? { ...s, id: `${spec.name}:${s.id}` } : null;
      });
      // The most recent failure of all shards.
      b.sample = samples.reduce<(typeof samples)[number]>(
        (latest, s) => (s && (!latest || (s.failedAt ?? '') > (latest.failedAt ?? '')) ? s : latest),
        null,
      );
    }),
  );
  const info = sourceInfo(first.source);
  const report = finishReport(
    {
      ...info,
      ...shardsWhere(
        parts.length,
        parts.map((p) => p.source.db.display),
      ),
    },
    { ...options, nowEpoch },
    metrics,
    byBizType,
    {
      notes: [...new Set(parts.flatMap((p) => p.rows.notes))],
      skipped: [...new Set(parts.flatMap((p) => p.rows.skipped))],
      ...(parts.some((p) => p.rows.byQueue) ? { byQueue: parts.flatMap((p) => p.rows.byQueue ?? []) } : {}),
    },
  );
  const shards: ShardReportEntry[] = [
    ...parts.map((p) => ({
      name: p.spec.name,
      ok: true,
      now: toIso(p.nowEpoch) as string,
      due: total(p.rows.due, capabilities.due),
      stuck: total(p.rows.stuck, capabilities.stuck),
      failedOpen: total(p.rows.failedOpen, capabilities.failedOpen),
    })),
    ...set.missing.map((m) => ({ name: m.name, ok: false, error: m.error })),
  ];
  if (set.missing.length)
    report.notes.push(
      `${set.missing.length} shards could not be reached and are not counted: ${set.missing.map((m) => m.name).join(', ')}`,
    );
  return {
    ...report,
    shards,
    ...(set.missing.length ? { missingShards: set.missing.map((m) => m.name) } : {}),
  };
}

/**
 * `report --trend` of a sharded source: every shard's buckets since the span's first bucket (as of
 * the merged report's now), added bucket by bucket.
 */
export async function shardTrend(set: ShardSet, span: string, nowEpoch: number): Promise<Trend> {
  const name = span as TrendSpan;
  const since = trendStart(name, nowEpoch);
  const parts = await eachShard(set, ({ source }) =>
    store.state.selectTrendBuckets(source, since, TREND_SPANS[name].bucketSeconds),
  );
  return buildTrend(name, nowEpoch, mergeTrendRows(parts));
}

/** Every span's trend of a sharded source (in TREND_SPAN_NAMES order), as of `nowEpoch`: the sharded console's charts. */
export function allShardTrends(set: ShardSet, nowEpoch: number): Promise<Trend[]> {
  return Promise.all(TREND_SPAN_NAMES.map((span) => shardTrend(set, span, nowEpoch)));
}

/**
 * The sweep figures of a sharded source: each shard's second failures and deferred rows, on its own
 * clock (as a sweep plans it), added; null when the rules apply to no shard.
 */
export async function shardSweepCounts(
  set: ShardSet,
  config: TaskreconConfig,
  sinceSeconds: number,
): Promise<{ secondFailures: number; deferred: number } | null> {
  const parts = (await eachShard(set, ({ source }) => sweepFigures(source, config, sinceSeconds))).filter(
    (p) => p !== null,
  );
  if (!parts.length) return null;
  return parts.map(sweepCounts).reduce((a, b) => ({
    secondFailures: a.secondFailures + b.secondFailures,
    deferred: a.deferred + b.deferred,
  }));
}
