import { describeBreach } from '../../core/report-text.js';
import type { FullReport } from '../../verbs/report/index.js';
import { html, type Html } from '../html.js';
import { formatSeconds } from '../../core/duration.js';

/** The auto-refresh period the toggle turns on. */
export const REFRESH_SECONDS = 30;

/** The auto-refresh period a request asks for (`?refresh=N`, 5 s to 1 h), or undefined: off. */
export function refreshOf(query: string | undefined): number | undefined {
  const n = Number(query);
  return Number.isInteger(n) && n >= 5 && n <= 3600 ? n : undefined;
}

function queueLines(report: FullReport): Html[] {
  const q = report.queues;
  if (!q) return [];
  return [
    ...q.breaches.map(
      (b) =>
        html`<li class="breach ${b.level}">
          queue ${b.broker} / ${b.queue}: ${b.metric} ${b.value} &gt;= ${b.threshold} (${b.level})
        </li>`,
    ),
    ...q.unreachable.map(
      (u) => html`<li class="breach warn">broker ${u.broker} unreachable: ${u.message}</li>`,
    ),
  ];
}

/**
 * The verdict at the top of the overview: `report`'s status (OK / WARNING / CRITICAL), each breached
 * threshold as `report` words it, the time it was computed (the database's clock) and the
 * auto-refresh toggle (a plain link: the page reloads itself by a meta refresh, no script).
 */
export function verdictBody(report: FullReport, refresh: number | undefined): Html {
  const status = report.status;
  const lines = [
    ...report.breaches.map((b) => html`<li class="breach ${b.level}">${describeBreach(b)}</li>`),
    ...queueLines(report),
  ];
  return html`<section id="verdict" class="verdict ${status.toLowerCase()}">
    <p class="verdict-line">
      <span id="verdict-status">${status}</span>
      <span class="muted"
        >as of
        ${html`<time id="as-of" datetime="${report.now}">${report.now.replace('T', ' ').replace(/(\.\d+)?Z$/, 'Z')}</time>`},
        window ${formatSeconds(report.window.seconds)}, the thresholds of <code>taskrecon report</code></span
      >
    </p>
    ${
      lines.length
        ? html`<ul class="breaches">
            ${lines}
          </ul>`
        : html`<p class="muted">No threshold breached.</p>`
    }
    <p id="auto-refresh" class="muted">
      ${refresh ? html`Auto-refresh on, every ${refresh} s · <a href="/">turn off</a>` : html`Auto-refresh off · <a href="/?refresh=${REFRESH_SECONDS}">turn on (every ${REFRESH_SECONDS} s)</a>`}
    </p>
  </section>`;
}
