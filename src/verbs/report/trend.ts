import { TREND_SPAN_NAMES, type Trend, type TrendSpan } from '../../core/trend.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store } from '../../db/port/index.js';

export { TREND_SPAN_NAMES };

/** `report --trend SPAN`: the same trend series the console charts, as of the report's now. */
export async function reportTrend(source: BoundSource, span: string, nowEpoch: number): Promise<Trend> {
  return store.state.loadTrend(source, span as TrendSpan, nowEpoch);
}

/** The trend of every span (in TREND_SPAN_NAMES order) as of `nowEpoch`: the console's overview charts. */
export async function allTrends(source: BoundSource, nowEpoch: number): Promise<Trend[]> {
  return Promise.all(TREND_SPAN_NAMES.map((span) => store.state.loadTrend(source, span, nowEpoch)));
}
