import { LOGICAL_STATUSES } from '../../core/task.js';
import type { Trend } from '../../core/trend.js';
import type { BizTypeSummary, ScanSummary } from '../../verbs/scan/index.js';
import { html, type Html } from '../html.js';
import { barChart, formatCount, formatRate, formatSeconds } from './charts.js';
import { count } from './layout.js';

export interface OverviewData {
  summary: ScanSummary;
  byBizType: BizTypeSummary[];
  notes: string[];
  trends: Trend[];
}

function bucketLabel(trend: Trend, start: number): string {
  const iso = new Date(start * 1000).toISOString();
  return trend.bucketSeconds >= 86_400 ? iso.slice(0, 10) : `${iso.slice(0, 13).replace('T', ' ')}:00Z`;
}

/** created ÷ failed over a whole trend span. */
export function spanFailureRate(trend: Trend): number | null {
  const created = trend.points.reduce((s, p) => s + p.created, 0);
  const failed = trend.points.reduce((s, p) => s + p.failed, 0);
  return created > 0 ? failed / created : null;
}

function trendCharts(trend: Trend): Html {
  const series = (pick: (p: Trend['points'][number]) => number | null) =>
    trend.points.map((p) => ({ label: bucketLabel(trend, p.start), value: pick(p) }));
  return html`<section class="trend">
    <h2>
      Last ${trend.span}
      <span class="muted">(tasks by creation time, ${trend.bucketSeconds / 3600} h buckets)</span>
    </h2>
    <div class="charts">
      ${barChart(
        'Created',
        series((p) => p.created),
        formatCount,
      )}
      ${barChart(
        'Failed',
        series((p) => p.failed),
        formatCount,
      )}
      ${barChart(
        'Failure rate',
        series((p) => p.failureRate),
        formatRate,
      )}
      ${barChart(
        'Latency (avg, created → success)',
        series((p) => p.latencyAvgSeconds),
        formatSeconds,
      )}
    </div>
  </section>`;
}

function statusLink(status: string, n: number): Html {
  const list = status === 'failed' ? 'failed' : undefined;
  return list ? html`<a href="/tasks?list=${list}">${count(n)}</a>` : count(n);
}

export function overviewBody(data: OverviewData): Html {
  const { summary } = data;
  const day = data.trends.find((t) => t.span === '24h');
  const rate = day ? spanFailureRate(day) : null;
  return html`<section class="cards">
      <div class="card">
        <span class="label">Tasks</span><span class="value">${count(summary.total)}</span>
      </div>
      <div class="card warn">
        <span class="label">Failed</span
        ><span class="value"><a href="/tasks?list=failed">${count(summary.byStatus.failed)}</a></span>
      </div>
      <div class="card warn">
        <span class="label">Stuck</span
        ><span class="value"><a href="/tasks?list=stuck">${count(summary.stuck)}</a></span>
      </div>
      <div class="card">
        <span class="label">Due</span
        ><span class="value"><a href="/tasks?list=due">${count(summary.due)}</a></span
        >${summary.oldestDueSeconds !== null ? html`<span class="muted">oldest ${formatSeconds(summary.oldestDueSeconds)}</span>` : ''}
      </div>
      <div class="card">
        <span class="label">Failure rate, 24 h</span
        ><span class="value">${rate === null ? html`<span class="muted">n/a</span>` : formatRate(rate)}</span>
      </div>
    </section>
    ${
      data.notes.length
        ? html`<ul class="notes">
            ${data.notes.map((n) => html`<li>${n}</li>`)}
          </ul>`
        : ''
    }
    <section>
      <h2>By status and biz type</h2>
      <table class="counts">
        <thead>
          <tr>
            <th>biz type</th>
            ${LOGICAL_STATUSES.map((s) => html`<th class="num">${s}</th>`)}
            <th class="num">stuck</th>
            <th class="num">due</th>
            <th class="num">total</th>
          </tr>
        </thead>
        <tbody>
          ${data.byBizType.map(
            (b) =>
              html`<tr>
                <td>${b.bizType ?? html`<span class="muted">(none)</span>`}</td>
                ${LOGICAL_STATUSES.map(
                  (s) =>
                    html`<td class="num">
                      ${s === 'failed' && b.bizType !== null && b.byStatus.failed > 0 ? html`<a href="/tasks?list=failed&amp;biz=${encodeURIComponent(b.bizType)}">${count(b.byStatus.failed)}</a>` : count(b.byStatus[s])}
                    </td>`,
                )}
                <td class="num">${count(b.stuck)}</td>
                <td class="num">${count(b.due)}</td>
                <td class="num">${count(b.total)}</td>
              </tr>`,
          )}
        </tbody>
        <tfoot>
          <tr>
            <th>all</th>
            ${LOGICAL_STATUSES.map((s) => html`<th class="num">${statusLink(s, summary.byStatus[s])}</th>`)}
            <th class="num">${count(summary.stuck)}</th>
            <th class="num">${count(summary.due)}</th>
            <th class="num">${count(summary.total)}</th>
          </tr>
        </tfoot>
      </table>
    </section>
    ${data.trends.map(trendCharts)}`;
}
