import type { AuditEntry } from '../../verbs/audit/index.js';
import { html, type Html } from '../html.js';
import { auditTable } from './detail.js';

export interface AuditQuery {
  operator: string;
  action: string;
  task: string;
  run: string;
}

export function auditBody(query: AuditQuery, entries: AuditEntry[], older: number | undefined): Html {
  const params = new URLSearchParams(
    Object.entries(query).filter(([, v]) => v !== '') as Array<[string, string]>,
  );
  if (older !== undefined) params.set('before', String(older));
  return html`<form class="filters" method="get" action="/audit">
      <label>operator <input name="operator" value="${query.operator}" /></label>
      <label>action <input name="action" value="${query.action}" placeholder="retry" /></label>
      <label>task id <input name="task" value="${query.task}" /></label>
      <label>run <input name="run" value="${query.run}" /></label>
      <button type="submit">Filter</button> <a href="/audit">clear</a>
    </form>
    ${auditTable(entries, true)}
    <nav class="pager">
      ${older !== undefined ? html`<a rel="next" href="/audit?${params.toString()}">older »</a>` : html`<span class="muted">end of log</span>`}
    </nav>`;
}
