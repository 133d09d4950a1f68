import type { FindingCode, MoveResult, QueueFinding } from '../../brokers/types.js';
import type { RecoverResult } from '../../verbs/queues/index.js';
import { html, type Html } from '../html.js';
import { count, csrfInput } from './layout.js';

/** Findings a recover fixes: due delayed jobs and expired reservations back to ready. */
const RECOVERABLE: ReadonlySet<FindingCode> = new Set(['delayed-overdue', 'reservation-expired']);
/** Findings of jobs no worker takes: a move to a queue one does. */
const MOVABLE: ReadonlySet<FindingCode> = new Set([
  'unknown-queue',
  'no-consumers',
  'stale-queue',
  'retry-exhausted',
]);

/** What a queue action names: recover a broker's queue, or move one queue into another. */
export interface QueueActionTarget {
  kind: 'recover' | 'move';
  broker: string;
  /** recover: the queue (empty: every queue of the layout); move: the queue the jobs come from. */
  queue: string;
  /** move: the queue they go to. */
  to: string;
}

function targetFields(t: QueueActionTarget): Html {
  return html`<input type="hidden" name="kind" value="${t.kind}" />
    <input type="hidden" name="broker" value="${t.broker}" />
    <input type="hidden" name="queue" value="${t.queue}" />`;
}

function actionFor(f: QueueFinding, csrf: string | undefined): Html {
  if (csrf === undefined || f.queue === null) return html``;
  if (RECOVERABLE.has(f.code))
    return html`<form class="queue-action" method="post" action="/queues/preview">
      ${csrfInput(csrf)} ${targetFields({ kind: 'recover', broker: f.broker, queue: f.queue, to: '' })}
      <button type="submit">Recover…</button>
    </form>`;
  if (MOVABLE.has(f.code))
    return html`<form class="queue-action" method="post" action="/queues/preview">
      ${csrfInput(csrf)} ${targetFields({ kind: 'move', broker: f.broker, queue: f.queue, to: '' })}
      <label>to queue <input name="to" required placeholder="default" /></label>
      <button type="submit">Move…</button>
    </form>`;
  return html``;
}

/**
 * The queues' findings, each with its fix hint and, where one fixes it, the Recover or Move action
 * (a preview first: nothing moves before the reason is given). `csrf` undefined: read-only, no action.
 */
export function findingsBody(findings: readonly QueueFinding[], csrf: string | undefined): Html {
  if (findings.length === 0) return html``;
  return html`<section class="queue-findings">
    <h2>Queue findings</h2>
    <ul class="findings">
      ${findings.map(
        (f) =>
          html`<li class="finding ${f.level}">
            <b>${f.level}</b> <code>${f.code}</code> ${f.broker}${f.queue ? ` / ${f.queue}` : ''}:
            ${f.message}
            <div class="hint">Fix: ${f.hint}</div>
            ${actionFor(f, csrf)}
          </li>`,
      )}
    </ul>
  </section>`;
}

function describeTarget(t: QueueActionTarget): string {
  return t.kind === 'recover'
    ? `Recover ${t.broker}${t.queue ? ` / ${t.queue}` : ''}: due delayed jobs and expired reservations back to ready`
    : `Move every job of ${t.broker} / ${t.queue} to ${t.to}`;
}

/**
 * The preview of a queue action: the dry run's count, as `--dry-run` gives it, and one reason box for
 * the whole action; applying runs it as the CLI does, audited under the console's operator.
 */
export function queuePreviewBody(t: QueueActionTarget, dry: RecoverResult | MoveResult, csrf: string): Html {
  return html`<p>${describeTarget(t)}.</p>
    <p>
      Dry run: <b id="queue-matched">${count(dry.matched)}</b> ${dry.matched === 1 ? 'job' : 'jobs'} would
      move. Nothing has moved.
    </p>
    ${
      dry.matched === 0
        ? html`<p class="muted">Nothing to do. <a href="/queues">Back to the queues</a></p>`
        : html`<form class="queue-apply" method="post" action="/queues/apply">
            ${csrfInput(csrf)} ${targetFields(t)}
            <input type="hidden" name="to" value="${t.to}" />
            <label>Reason (for the audit log) <input name="reason" required minlength="3" /></label>
            <button type="submit">Apply</button>
            <a href="/queues">Cancel</a>
          </form>`
    }`;
}
