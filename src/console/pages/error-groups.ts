import type { ErrorGroup } from '../../core/error-groups.js';
import type { ListErrors } from '../../verbs/scan/index.js';
import { queryParams, type ListQuery } from '../filters.js';
import { html, type Html } from '../html.js';
import { count } from './layout.js';

/** How the groups are ordered: most tasks first (the default), or by error text. */
export type GroupSort = 'count' | 'error';

export function groupSortOf(value: string | undefined): GroupSort {
  return value === 'error' ? 'error' : 'count';
}

function sorted(groups: readonly ErrorGroup[], by: GroupSort): ErrorGroup[] {
  return by === 'error' ? [...groups].sort((a, b) => a.pattern.localeCompare(b.pattern)) : [...groups];
}

/**
 * A filtered list's total and its tasks grouped by normalised last error (numbers, ids and quoted
 * values taken out), each group a link to the list narrowed to it; sortable by size or by text.
 */
export function errorGroupsBody(query: ListQuery, errors: ListErrors, by: GroupSort): Html {
  const base = queryParams(query);
  const sortLink = (to: GroupSort, label: string) => {
    const p = new URLSearchParams(base);
    if (to !== 'count') p.set('gsort', to);
    return to === by ? html`<b>${label}</b>` : html`<a href="/tasks?${p.toString()}">${label}</a>`;
  };
  const narrowed = (g: ErrorGroup) => {
    const p = new URLSearchParams(base);
    p.set('error', g.contains);
    return `/tasks?${p.toString()}`;
  };
  const groups = errors.groups ?? [];
  return html`<section class="error-groups">
    <p>
      <span id="list-total">${count(errors.total)}</span> ${errors.total === 1 ? 'task' : 'tasks'} in this
      list${groups.length ? html`, ${count(groups.length)} kinds of error` : ''}
    </p>
    ${
      groups.length
        ? html`<details ${groups.length <= 10 ? html`open` : ''}>
            <summary>By error</summary>
            <p class="muted">Sort: ${sortLink('count', 'most tasks')} · ${sortLink('error', 'error text')}</p>
            <table class="groups">
              <thead>
                <tr>
                  <th class="num">tasks</th>
                  <th>error (numbers, ids and quoted values as # &lt;uuid&gt; '…')</th>
                </tr>
              </thead>
              <tbody>
                ${sorted(groups, by).map(
                  (g) =>
                    html`<tr>
                      <td class="num">${count(g.count)}</td>
                      <td class="error" title="${g.example ?? ''}">
                        ${g.contains ? html`<a href="${narrowed(g)}">${g.pattern}</a>` : g.pattern}
                      </td>
                    </tr>`,
                )}
                ${
                  errors.other > 0
                    ? html`<tr>
                        <td class="num">${count(errors.other)}</td>
                        <td class="muted">other, rarer errors</td>
                      </tr>`
                    : ''
                }
              </tbody>
            </table>
          </details>`
        : ''
    }
  </section>`;
}
