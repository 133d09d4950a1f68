import type { Task } from '../../core/task.js';
import type { BulkRun } from '../bulk.js';
import { queryParams } from '../filters.js';
import { html, type Html } from '../html.js';
import { ACTION_LABELS } from './actions.js';
import { effectBlocksRetry, effectRows, type TaskEffect } from '../../verbs/compensate/index.js';
import { count, csrfInput } from './layout.js';

function filterSummary(run: BulkRun): Html {
  const q = run.query;
  const parts = [
    `list ${q.list}`,
    q.bizTypes.length ? `biz type ${q.bizTypes.join(', ')}` : '',
    q.error ? `error contains “${q.error}”` : '',
    q.payload ? `payload contains “${q.payload}”` : '',
    q.since ? `since ${q.since}` : '',
    q.until ? `until ${q.until}` : '',
  ].filter(Boolean);
  return html`<a href="/tasks?${queryParams(q).toString()}">${parts.join(' · ')}</a>`;
}

/** The effect cell of a preview row, and the note on what a retry skips. */
function effectCell(effects: Map<string, TaskEffect> | undefined, task: Task): Html {
  const effect = effects?.get(String(task.id));
  if (!effect) return html`<td>–</td>`;
  return html`<td class="effect ${effect.state}" title="${effectRows(effect)}">${effect.state}</td>`;
}

function effectNote(run: BulkRun, effects: Map<string, TaskEffect> | undefined): Html {
  if (!effects) return html``;
  const there = [...effects.values()].filter(effectBlocksRetry).length;
  return html`<p class="effect-note" id="effect-note">
    Each task's effect is checked with the diff rules before it is retried: a task whose effect is already
    there (present or duplicated) is <b>not retried</b>, listed after the run and audited as effect-refused
    (${there} of the ${effects.size} shown below). To retry one of them anyway, open it and confirm on its
    page.
  </p>`;
}

/** After the run: the tasks kept from a retry because their effect is there. */
function effectSkips(run: BulkRun): Html {
  const e = run.result?.effect;
  if (!e || e.refused === 0) return html``;
  return html`<section id="effect-skipped">
    <h2>Not retried: effect already there (${count(e.refused)})</h2>
    <p>
      Each is audited as effect-refused. Check the business rows; a task can be retried anyway from its page.
    </p>
    <p>
      ${e.refusedIds.map(
        (id) => html`<a href="/tasks/${encodeURIComponent(String(id))}">${String(id)}</a> `,
      )}${e.refused > e.refusedIds.length ? ' …' : ''}
    </p>
  </section>`;
}

export function bulkBody(
  run: BulkRun,
  sample: Task[],
  csrf: string,
  effects?: Map<string, TaskEffect>,
): Html {
  const label = ACTION_LABELS[run.action];
  const head = html`<p class="frozen">
    ${label}: <b id="frozen-count">${count(run.ids.length)}</b> tasks frozen at ${run.frozenAt}
    (${filterSummary(run)}). Only these tasks are acted on; tasks that match the filter later are not.
  </p>`;
  if (run.state === 'preview') {
    return html`${head}
      <form
        method="post"
        action="/bulk/${run.id}/apply"
        class="apply"
        data-confirm="${label} ${run.ids.length} tasks?"
      >
        ${csrfInput(csrf)}
        <input
          name="reason"
          required
          minlength="3"
          placeholder="Reason (required, goes to the audit log)"
          aria-label="Reason"
        />
        <button type="submit" class="${run.action === 'forget' ? 'danger' : ''}">
          ${label} ${count(run.ids.length)} tasks
        </button>
      </form>
      ${effectNote(run, effects)}
      <h2>First ${sample.length} of them</h2>
      <table class="tasks">
        <thead>
          <tr>
            <th class="num">id</th>
            <th>biz type</th>
            <th>biz id</th>
            <th>status</th>
            ${effects ? html`<th>effect</th>` : ''}
            <th>last error</th>
          </tr>
        </thead>
        <tbody>
          ${sample.map(
            (t) =>
              html`<tr>
                <td class="num"><a href="/tasks/${encodeURIComponent(String(t.id))}">${t.id}</a></td>
                <td>${t.bizType}</td>
                <td>${t.bizId}</td>
                <td>${t.status}</td>
                ${effects ? effectCell(effects, t) : ''}
                <td class="error">${(t.lastError ?? '').slice(0, 120)}</td>
              </tr>`,
          )}
        </tbody>
      </table>`;
  }
  const pct = run.ids.length ? Math.floor((100 * run.done) / run.ids.length) : 100;
  const result = run.result;
  return html`${head}
    <p>
      <progress id="bulk-progress" max="${run.ids.length}" value="${run.done}">${pct}%</progress>
      <span id="bulk-state" data-state="${run.state}">${run.state}</span>: ${count(run.done)} of
      ${count(run.ids.length)} done, ${count(run.applied)} changed.
    </p>
    ${run.error ? html`<p class="flash error">Stopped: ${run.error}</p>` : ''}
    ${result ? html`<p id="bulk-result">applied <b>${count(result.applied)}</b>, skipped ${count(result.skipped)} (moved meanwhile or already there), refused ${count(result.refused)}. Reason “${run.reason}”, operator ${result.operator}. <a href="/audit?run=${encodeURIComponent(result.runId)}">Audit rows of this run</a></p>` : ''}
    ${effectSkips(run)}`;
}
