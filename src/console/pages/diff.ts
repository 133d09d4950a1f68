import type { RuleResult } from '../../verbs/diff/index.js';
import { html, type Html } from '../html.js';
import { count } from './layout.js';

export function diffIndexBody(names: readonly string[], problem: string | undefined): Html {
  if (problem) return html`<p class="notes">${problem}</p>`;
  return html`<p>
      Diff reads the task table and a rule's business table and lists what does not match. It runs when you
      open a rule.
    </p>
    <ul class="rules">
      ${names.map((n) => html`<li><a href="/diff/${encodeURIComponent(n)}">${n}</a></li>`)}
    </ul>`;
}

export function diffRuleBody(rule: RuleResult): Html {
  const f = rule.findings;
  return html`<p>
      ${rule.bizType} tasks of ${rule.table} against ${rule.business.table}.${rule.business.key} (expect
      ${rule.business.expect}, ${rule.walk} walk, ${rule.durationMs} ms): ${count(rule.tasksChecked)} tasks
      checked.
    </p>
    <section class="cards">
      <div class="card warn">
        <span class="label">missing</span><span class="value">${count(f.missing)}</span>
      </div>
      <div class="card warn">
        <span class="label">duplicate</span><span class="value">${count(f.duplicate)}</span>
      </div>
      <div class="card"><span class="label">orphan</span><span class="value">${count(f.orphan)}</span></div>
      <div class="card">
        <span class="label">unsettled</span><span class="value">${count(f.unsettled)}</span>
      </div>
    </section>
    ${
      rule.warnings.length
        ? html`<ul class="notes">
            ${rule.warnings.map((w) => html`<li>${w}</li>`)}
          </ul>`
        : ''
    }
    <h2>Samples</h2>
    <table class="findings">
      <thead>
        <tr>
          <th>kind</th>
          <th>key</th>
          <th>task</th>
          <th>status</th>
          <th class="num">business rows</th>
        </tr>
      </thead>
      <tbody>
        ${rule.samples.map(
          (s) =>
            html`<tr>
              <td>${s.kind}</td>
              <td>${s.key ?? '–'}</td>
              <td>
                ${s.taskId === null ? '–' : html`<a href="/tasks/${encodeURIComponent(String(s.taskId))}">${s.taskId}</a>`}
              </td>
              <td>${s.status ?? '–'}</td>
              <td class="num">${s.businessRows}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}
