import type { AuditEntry } from '../../verbs/audit/index.js';
import {
  effectBlocksRetry,
  effectRows,
  type CompensateAction,
  type TaskEffect,
} from '../../verbs/compensate/index.js';
import type { ShowResult } from '../../verbs/show/index.js';
import { html, type Html } from '../html.js';
import { ACTION_LABELS } from './actions.js';
import { changeCells } from './audit.js';
import { csrfInput, when } from './layout.js';

export interface DetailData {
  shown: ShowResult;
  /** Actions this task can take now (empty when read-only). */
  actions: CompensateAction[];
  csrf: string;
  /** The task's effect, when it can be retried (from the diff rules covering its biz type). */
  effect?: TaskEffect;
  /** A retry was just refused for the effect: show the second, explicit confirmation. */
  confirmEffect?: boolean;
}

/** The effect as the detail page states it. */
function effectText(effect: TaskEffect): string {
  if (effect.state === 'no-rule') return 'no rule (no diff rule covers this biz type)';
  if (effect.state === 'missing')
    return `missing: no row in ${effect.rules.map((r) => `${r.table} where ${r.key} = '${r.value ?? ''}'`).join(', ')}`;
  return `${effect.state}: ${effectRows(effect)}`;
}

/**
 * The second confirmation of a retry whose effect is there: it names the business rows, and the
 * box must be ticked; the retry then goes through, audited as effect-forced.
 */
function forceEffectForm(data: DetailData): Html {
  const effect = data.effect;
  if (!data.confirmEffect || !effect || !effectBlocksRetry(effect) || !data.actions.includes('retry'))
    return html``;
  const id = String(data.shown.task.id);
  const rows = effectRows(effect);
  return html`<section class="actions force-effect" id="force-effect">
    <h2>Retry anyway?</h2>
    <p class="flash error">
      The effect of task ${id} is already there: <b>${rows}</b>. Retrying runs the task again; a handler that
      is not idempotent applies it twice.
    </p>
    <form
      method="post"
      action="/tasks/${encodeURIComponent(id)}/actions"
      data-confirm="Retry task ${id} although ${rows} exists?"
    >
      ${csrfInput(data.csrf)}
      <input type="hidden" name="action" value="retry" />
      <label
        ><input type="checkbox" name="force-effect" value="yes" required /> I checked ${rows}: retry anyway
        (audited as effect-forced)</label
      >
      <input
        name="reason"
        required
        minlength="3"
        placeholder="Reason (required, goes to the audit log)"
        aria-label="Reason for retrying anyway"
      />
      <button type="submit" class="danger">Retry anyway</button>
    </form>
  </section>`;
}

function payloadText(shown: ShowResult): string {
  const { task } = shown;
  if (task.payloadFormat === 'json') return JSON.stringify(task.payload, null, 2);
  return task.payloadText ?? '';
}

/** The task's own audit history (the audit page adds the source and the task to each row). */
function auditTable(entries: readonly AuditEntry[]): Html {
  if (entries.length === 0) return html`<p class="muted">No manual change recorded.</p>`;
  return html`<table class="audit">
    <thead>
      <tr>
        <th>at</th>
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
            ${changeCells(e)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** The task's actions: one form, one reason box, a button per action (each asks its own question). */
function actionForms(data: DetailData): Html {
  if (data.actions.length === 0) return html``;
  const id = String(data.shown.task.id);
  return html`<section class="actions">
    <h2>Actions</h2>
    <form method="post" action="/tasks/${encodeURIComponent(id)}/actions" class="task-actions">
      ${csrfInput(data.csrf)}
      <input
        name="reason"
        required
        minlength="3"
        placeholder="Reason (required, goes to the audit log)"
        aria-label="Reason for the action"
      />
      ${data.actions.map(
        (a) =>
          html`<button
            type="submit"
            class="${a === 'forget' ? 'danger' : ''}"
            name="action"
            value="${a}"
            data-confirm="${ACTION_LABELS[a]} task ${id}?"
          >
            ${ACTION_LABELS[a]}
          </button>`,
      )}
    </form>
  </section>`;
}

export function detailBody(data: DetailData): Html {
  const { task } = data.shown;
  const fields: Array<[string, unknown]> = [
    ['id', task.id],
    ['status', task.status],
    ['stored status', task.rawStatus],
    ['biz type', task.bizType],
    ['biz id', task.bizId],
    ['event id', task.eventId],
    [
      'attempts',
      task.maxAttempts === undefined
        ? task.attempts
        : `${task.attempts ?? '–'} of ${task.maxAttempts ?? '–'}`,
    ],
    ['queue', task.queue],
  ];
  return html`<dl class="fields">
      ${fields
        .filter(([, v]) => v !== undefined)
        .map(
          ([k, v]) =>
            html`<dt>${k}</dt>
              <dd>
                ${k === 'status' ? html`<span class="status ${String(v)}" id="task-status">${v}</span>` : (v ?? '–')}
              </dd>`,
        )}
      ${
        data.effect
          ? html`<dt>effect</dt>
              <dd>
                <span class="effect ${data.effect.state}" id="task-effect" data-state="${data.effect.state}"
                  >${effectText(data.effect)}</span
                >
              </dd>`
          : ''
      }
      <dt>next retry</dt>
      <dd>${when(task.nextRetryAt)}</dd>
      <dt>created</dt>
      <dd>${when(task.createdAt)}</dd>
      <dt>updated</dt>
      <dd>${when(task.updatedAt)}</dd>
    </dl>
    ${forceEffectForm(data)} ${actionForms(data)}
    <section>
      <h2>Last error</h2>
      <pre class="error" id="last-error">${task.lastError ?? ''}</pre>
    </section>
    <section>
      <h2>Payload <span class="muted">${task.payloadFormat ?? 'empty'}</span></h2>
      <pre class="payload" id="payload">${payloadText(data.shown)}</pre>
    </section>
    <section>
      <h2>Audit history</h2>
      ${auditTable(data.shown.audit)}
    </section>`;
}
