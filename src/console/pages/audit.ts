import type { AuditEntry } from '../../verbs/audit/index.js';
import { html, type Html } from '../html.js';
import { when } from './layout.js';

export interface AuditQuery {
  operator: string;
  action: string;
  task: string;
  run: string;
  source: string;
}

/** The cells every audit table shows of a change: who, what, from → to, why, and its run. */
export function changeCells(e: AuditEntry): Html {
  return html`<td class="operator">${e.operator}</td>
    <td>${e.action}</td>
    <td>${e.from ?? '–'} → ${e.to ?? '–'}</td>
    <td class="reason">${e.reason ?? ''}</td>
    <td class="muted">
      <a href="/audit?run=${encodeURIComponent(e.runId)}">${e.runId.slice(0, 8)}</a>
    </td>`;
}

/**
 * The audit log as a table: every audited change (tasks, broker moves and recoveries), each with its
 * source; a task id links to its page only when that task is still in the console's table.
 */
function auditLogTable(entries: readonly AuditEntry[], linked: (e: AuditEntry) => boolean): Html {
  if (entries.length === 0) return html`<p class="muted">No change recorded.</p>`;
  return html`<table class="audit">
    <thead>
      <tr>
        <th>at</th>
        <th>source</th>
        <th>task / job</th>
        <th>operator</th>
        <th>action</th>
        <th>from → to</th>
        <th>reason</th>
        <th>run</th>
      </tr>
    </thead>
    <tbody>
      ${entries.map(
        (e) =>
          html`<tr>
            <td>${when(e.at)}</td>
            <td>${e.source}${e.table ? html` <span class="muted">${e.table}</span>` : ''}</td>
            <td>
              ${linked(e) ? html`<a href="/tasks/${encodeURIComponent(e.taskId)}">${e.taskId}</a>` : html`<span title="not in this table now">${e.taskId}</span>`}
            </td>
            ${changeCells(e)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function auditBody(
  query: AuditQuery,
  entries: AuditEntry[],
  older: number | undefined,
  linked: (e: AuditEntry) => boolean,
): Html {
  const params = new URLSearchParams(
    Object.entries(query).filter(([, v]) => v !== '') as Array<[string, string]>,
  );
  if (older !== undefined) params.set('before', String(older));
  return html`<form class="filters" method="get" action="/audit">
      <label>source <input name="source" value="${query.source}" placeholder="all" /></label>
      <label>operator <input name="operator" value="${query.operator}" /></label>
      <label>action <input name="action" value="${query.action}" placeholder="retry" /></label>
      <label>task id <input name="task" value="${query.task}" /></label>
      <label>run <input name="run" value="${query.run}" /></label>
      <button type="submit">Filter</button> <a href="/audit">clear</a>
    </form>
    ${auditLogTable(entries, linked)}
    <nav class="pager">
      ${older !== undefined ? html`<a rel="next" href="/audit?${params.toString()}">older »</a>` : html`<span class="muted">end of log</span>`}
    </nav>`;
}
