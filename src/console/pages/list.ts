import type { Task } from '../../core/task.js';
import type { CompensateAction } from '../../verbs/compensate/index.js';
import { queryParams, type ListQuery } from '../filters.js';
import { html, type Html } from '../html.js';
import { ACTION_LABELS } from './actions.js';
import { csrfInput, when } from './layout.js';

export interface ListData {
  query: ListQuery;
  tasks: Task[];
  /** The link parameter of the next page; undefined on the last page. */
  next: string | undefined;
  /** Whether this is the first page. */
  first: boolean;
  /** Actions a bulk run of this list may take (empty when read-only). */
  bulkActions: CompensateAction[];
  csrf: string;
  /** Why the table cannot have this list, when it cannot. */
  unavailable?: string;
}

function filterForm(q: ListQuery): Html {
  return html`<form class="filters" method="get" action="/tasks">
    <input type="hidden" name="list" value="${q.list}" />
    <label>biz type <input name="biz" value="${q.bizTypes.join(',')}" placeholder="sms,order" /></label>
    <label>error contains <input name="error" value="${q.error}" placeholder="timeout" /></label>
    <label>payload contains <input name="payload" value="${q.payload}" placeholder="order-1042" /></label>
    <label>since <input name="since" value="${q.since}" placeholder="24h or 2026-11-29T08:00Z" /></label>
    <label>until <input name="until" value="${q.until}" /></label>
    <button type="submit">Filter</button>
    <a href="/tasks?list=${q.list}">clear</a>
  </form>`;
}

function bulkForm(data: ListData): Html {
  if (data.bulkActions.length === 0 || data.tasks.length === 0) return html``;
  const q = data.query;
  return html`<form class="bulk" method="post" action="/bulk">
    ${csrfInput(data.csrf)}
    <input type="hidden" name="list" value="${q.list}" />
    <input type="hidden" name="biz" value="${q.bizTypes.join(',')}" />
    <input type="hidden" name="error" value="${q.error}" />
    <input type="hidden" name="payload" value="${q.payload}" />
    <input type="hidden" name="since" value="${q.since}" />
    <input type="hidden" name="until" value="${q.until}" />
    <label
      >On every task of this filtered list:
      <select name="action">
        ${data.bulkActions.map((a) => html`<option value="${a}">${ACTION_LABELS[a]}</option>`)}
      </select></label
    >
    <button type="submit">Preview…</button>
    <span class="muted"
      >The preview freezes the exact tasks and their count; nothing changes before you apply it.</span
    >
  </form>`;
}

export function listBody(data: ListData): Html {
  if (data.unavailable)
    return html`${filterForm(data.query)}
      <p class="notes">${data.unavailable}</p>`;
  const params = queryParams(data.query);
  const nextParams = new URLSearchParams(params);
  if (data.next) nextParams.set('after', data.next);
  return html`${filterForm(data.query)} ${bulkForm(data)}
    <table class="tasks">
      <thead>
        <tr>
          <th class="num">id</th>
          <th>biz type</th>
          <th>biz id</th>
          <th>status</th>
          <th class="num">attempts</th>
          <th>next retry</th>
          <th>updated</th>
          <th>last error</th>
        </tr>
      </thead>
      <tbody>
        ${
          data.tasks.length === 0
            ? html`<tr>
                <td colspan="8" class="muted">No task matches.</td>
              </tr>`
            : ''
        }
        ${data.tasks.map(
          (t) =>
            html`<tr>
              <td class="num"><a href="/tasks/${encodeURIComponent(String(t.id))}">${t.id}</a></td>
              <td>${t.bizType}</td>
              <td>${t.bizId}</td>
              <td><span class="status ${t.status}">${t.status}</span></td>
              <td class="num">${t.attempts}</td>
              <td>${when(t.nextRetryAt)}</td>
              <td>${when(t.updatedAt)}</td>
              <td class="error">${(t.lastError ?? '').slice(0, 160)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    <nav class="pager">
      ${data.first ? '' : html`<a href="/tasks?${params.toString()}">« first page</a>`}
      ${data.next ? html`<a rel="next" href="/tasks?${nextParams.toString()}">next ${data.tasks.length} »</a>` : html`<span class="muted">end of list</span>`}
    </nav>`;
}
