import type { SnapshotRow } from '../../verbs/queues/index.js';
import type { QueuesResult, QueueStats } from '../../brokers/types.js';
import { html, type Html } from '../html.js';
import { barChart, formatCount } from './charts.js';
import { count } from './layout.js';
import { findingsBody } from './queue-actions.js';

/** Snapshots shown per queue: the newest ones. */
const HISTORY_POINTS = 48;

/** The overview's backlog section: the history charts, or nothing without snapshots. */
export function backlogSection(rows: readonly SnapshotRow[]): Html | string {
  return rows.length
    ? html`<section>
        <h2>Queue backlog <span class="muted">(snapshots recorded by queues)</span></h2>
        ${backlogHistory(rows)}
      </section>`
    : '';
}

/** Backlog history per queue from the snapshots `queues` recorded (depth at each run). */
export function backlogHistory(rows: readonly SnapshotRow[]): Html {
  if (rows.length === 0)
    return html`<p class="muted">
      No backlog history: run <code>taskrecon queues</code> on a schedule with a database to record snapshots.
    </p>`;
  const byQueue = new Map<string, SnapshotRow[]>();
  for (const r of rows) {
    const key = `${r.broker} / ${r.queue}`;
    const list = byQueue.get(key) ?? [];
    list.push(r);
    byQueue.set(key, list);
  }
  return html`<div class="charts">
    ${[...byQueue].map(([key, list]) =>
      barChart(
        key,
        list.slice(-HISTORY_POINTS).map((r) => ({
          label: new Date(r.atEpoch * 1000).toISOString().replace('.000Z', 'Z'),
          value: r.depth,
        })),
        formatCount,
      ),
    )}
  </div>`;
}

/** BullMQ's first failed jobs of a queue: what each carried and why it failed. */
function failedJobsBody(q: QueueStats): Html | string {
  const jobs = q.failedJobs ?? [];
  if (jobs.length === 0) return '';
  return html`<h3>Failed jobs of ${q.name} <span class="muted">(newest ${jobs.length})</span></h3>
    <table class="failed-jobs">
      <thead>
        <tr>
          <th>job</th>
          <th>name</th>
          <th class="num">attempts</th>
          <th>error</th>
          <th>payload</th>
        </tr>
      </thead>
      <tbody>
        ${jobs.map(
          (j) =>
            html`<tr>
              <td>${j.jobId}</td>
              <td>${j.name}</td>
              <td class="num">${j.attemptsMade}</td>
              <td>
                ${j.failedReason ?? ''}
                ${
                  j.stacktrace.length
                    ? html`<details>
                        <summary>stack</summary>
                        <pre>${j.stacktrace[0] ?? ''}</pre>
                      </details>`
                    : ''
                }
              </td>
              <td><code>${JSON.stringify(j.data) ?? ''}</code></td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

/** The queues page; `csrf` undefined (read-only): the findings carry no action. */
export function queuesBody(
  result: QueuesResult,
  history: readonly SnapshotRow[],
  csrf: string | undefined,
): Html {
  return html`${result.brokers.map(
      (b) =>
        html`<section>
          <h2>${b.name} <span class="muted">${b.kind}${b.framework ? ` · ${b.framework}` : ''}</span></h2>
          <table class="queues">
            <thead>
              <tr>
                <th>queue</th>
                <th class="num">ready</th>
                <th class="num">delayed</th>
                <th class="num">overdue</th>
                <th class="num">reserved</th>
                <th class="num">expired</th>
                <th class="num">unacked</th>
                <th class="num">consumers</th>
                ${b.framework === 'bullmq' ? html`<th class="num">failed</th>` : ''}
              </tr>
            </thead>
            <tbody>
              ${b.queues.map(
                (q) =>
                  html`<tr>
                    <td>${q.name}</td>
                    <td class="num">${count(q.ready)}</td>
                    <td class="num">${count(q.delayed)}</td>
                    <td class="num">${count(q.delayedOverdue)}</td>
                    <td class="num">${count(q.reserved)}</td>
                    <td class="num">${count(q.reservedExpired)}</td>
                    <td class="num">${count(q.unacked)}</td>
                    <td class="num">${count(q.consumers)}</td>
                    ${b.framework === 'bullmq' ? html`<td class="num">${count(q.bullmq?.failed ?? null)}</td>` : ''}
                  </tr>`,
              )}
            </tbody>
          </table>
          ${b.queues.map((q) => failedJobsBody(q))}
          ${
            b.notes?.length
              ? html`<ul class="notes">
                  ${b.notes.map((n) => html`<li>${n}</li>`)}
                </ul>`
              : ''
          }
        </section>`,
    )}
    ${findingsBody(result.findings, csrf)}
    <h2>Backlog history</h2>
    ${backlogHistory(history)}`;
}
