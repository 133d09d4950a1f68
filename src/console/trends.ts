import type { BoundSource } from '../db/bind-source.js';
import { selectTrendBuckets } from '../db/sql/console-trends.js';
import { buildTrend, trendStart, TREND_SPANS, type Trend, type TrendSpan } from '../core/trend.js';

/** The trend series of a span as of `nowEpoch`: the one computation the console and `report --trend` share. */
export async function loadTrend(source: BoundSource, span: TrendSpan, nowEpoch: number): Promise<Trend> {
  const rows = await selectTrendBuckets(source, trendStart(span, nowEpoch), TREND_SPANS[span].bucketSeconds);
  return buildTrend(span, nowEpoch, rows);
}
