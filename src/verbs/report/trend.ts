import { TREND_SPAN_NAMES, type Trend, type TrendSpan } from '../../core/trend.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store } from '../../db/port/index.js';

export { TREND_SPAN_NAMES };

/** `report --trend SPAN`: the same trend series the console charts, as of the report's now. */
export async function reportTrend(source: BoundSource, span: string, nowEpoch: number): Promise<Trend> {
  return store.state.loadTrend(source, span as TrendSpan, nowEpoch);
}
