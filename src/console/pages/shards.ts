import { LOGICAL_STATUSES } from '../../core/task.js';
import type { ShardOverview } from '../../verbs/scan/index.js';
import { html, type Html } from '../html.js';
import { shardPrefix } from '../shards/paths.js';
import { count } from './layout.js';

/** A count linking to one of a shard's lists. */
function listLink(prefix: string, list: 'failed' | 'stuck' | 'due', n: number | null): Html {
  return n === null || n === 0 ? count(n) : html`<a href="${prefix}/tasks?list=${list}">${count(n)}</a>`;
}

/** The merged overview's table of shards: each shard's own figures, its name opening its console. */
export function shardTableBody(
  overview: ShardOverview,
  missing: ReadonlyArray<{ name: string; error: string }>,
): Html {
  const down = overview.shards.filter((s) => s.error !== undefined);
  return html`<section>
    <h2>Shards <span class="muted">(each shard's own figures, on its own clock)</span></h2>
    ${
      missing.length + down.length
        ? html`<p class="flash error" id="shards-missing">
            Left out of the totals above:
            ${[...missing, ...down].map((s, i) => html`${i ? ', ' : ''}<b>${s.name}</b>`)}
            (${missing.length ? 'not reachable when the console started' : 'did not answer now'}).
          </p>`
        : ''
    }
    <table class="counts" id="shards">
      <thead>
        <tr>
          <th>shard</th>
          <th class="num">total</th>
          ${LOGICAL_STATUSES.map((s) => html`<th class="num">${s}</th>`)}
          <th class="num">stuck</th>
          <th class="num">due</th>
        </tr>
      </thead>
      <tbody>
        ${overview.shards.map((s) => {
          const prefix = shardPrefix(s.name);
          const head = html`<td><a class="shard" href="${prefix}/">${s.name}</a></td>`;
          if (!s.summary)
            return html`<tr class="shard-error">
              ${head}
              <td colspan="${LOGICAL_STATUSES.length + 3}">did not answer: ${s.error}</td>
            </tr>`;
          const sum = s.summary;
          return html`<tr>
            ${head}
            <td class="num">${count(sum.total)}</td>
            ${LOGICAL_STATUSES.map(
              (st) =>
                html`<td class="num">
                  ${st === 'failed' ? listLink(prefix, 'failed', sum.byStatus.failed) : count(sum.byStatus[st])}
                </td>`,
            )}
            <td class="num">${listLink(prefix, 'stuck', sum.stuck)}</td>
            <td class="num">${listLink(prefix, 'due', sum.due)}</td>
          </tr>`;
        })}
        ${missing.map(
          (m) =>
            html`<tr class="shard-error">
              <td>${m.name}</td>
              <td colspan="${LOGICAL_STATUSES.length + 3}">
                not reachable when the console started: ${m.error}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}

/** A page of a shard's console asked for at the top level: the same page on each shard. */
export function pickShardBody(names: readonly string[], pathAndQuery: string): Html {
  return html`<p>
      This source is sharded: lists, tasks, actions and the audit log are per shard. Open it on one shard:
    </p>
    <ul class="shard-pick">
      ${names.map((n) => html`<li><a href="${shardPrefix(n)}${pathAndQuery}">${n}</a></li>`)}
    </ul>`;
}
