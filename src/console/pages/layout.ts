import { html, type Html } from '../html.js';
import { UNSCOPED } from '../shards/paths.js';
import { CSRF_FIELD } from '../security/csrf.js';
import { grouped } from '../../core/grouped.js';

/** What every page shows around its content. */
export interface Frame {
  title: string;
  /** Which navigation entry is current. */
  nav: 'overview' | 'failed' | 'stuck' | 'due' | 'audit' | 'diff' | 'queues' | '';
  csrf: string;
  readOnly: boolean;
  operator: string;
  sourceName: string;
  table: string;
  /** A one-line note at the top (an action's outcome). */
  flash?: { kind: 'ok' | 'error'; text: string };
  /** Reload every N seconds (bulk progress, without script). */
  refreshSeconds?: number;
  hasQueues?: boolean;
  /** On one shard's pages: the shard's name (the header links back to the merged overview). */
  shard?: string;
}

const NAV: Array<[Frame['nav'], string, string]> = [
  ['overview', '/', 'Overview'],
  ['failed', '/tasks?list=failed', 'Failed'],
  ['stuck', '/tasks?list=stuck', 'Stuck'],
  ['due', '/tasks?list=due', 'Due'],
  ['audit', '/audit', 'Audit log'],
  ['diff', '/diff', 'Diff'],
];

/** The hidden CSRF field every state-changing form carries. */
export function csrfInput(csrf: string): Html {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${csrf}" />`;
}

export function page(frame: Frame, body: Html): string {
  const nav = frame.hasQueues ? [...NAV, ['queues', '/queues', 'Queues'] as const] : NAV;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${frame.refreshSeconds ? html`<meta http-equiv="refresh" content="${frame.refreshSeconds}" />` : ''}
        <title>${frame.title} · taskrecon console</title>
        <link rel="stylesheet" href="/static/console.css" />
        <script src="/static/console.js" defer></script>
      </head>
      <body>
        <header>
          <a class="brand" href="/">taskrecon</a>
          <nav>
            ${nav.map(([key, href, label]) => html`<a href="${href}" ${key === frame.nav ? html` aria-current="page"` : ''}>${label}</a>`)}
          </nav>
          <span class="who"
            >source
            <b>${frame.sourceName}</b>
            (${frame.table})${frame.shard !== undefined ? html` · shard <b class="shard">${frame.shard}</b> · <a href="/" ${UNSCOPED}>all shards</a>` : ''}
            · operator
            <b>${frame.operator}</b
            >${frame.readOnly ? html` · <span class="badge ro">read-only</span>` : ''}</span
          >
        </header>
        <main>
          ${frame.flash ? html`<p class="flash ${frame.flash.kind}" role="status">${frame.flash.text}</p>` : ''}
          <h1>${frame.title}</h1>
          ${body}
        </main>
      </body>
    </html>`.text;
}

/** An ISO time as the pages show it (UTC, to the second), or a dash. */
export function when(iso: string | null | undefined): Html {
  if (!iso) return html`<span class="muted">–</span>`;
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/(\.\d+)?Z$/, 'Z')}</time>`;
}

/** A number with thousands separators, or n/a. */
export function count(n: number | null | undefined): Html {
  return n === null || n === undefined ? html`<span class="muted">n/a</span>` : html`${grouped(n)}`;
}
