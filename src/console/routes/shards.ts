import type { Hono } from 'hono';
import { describeForPage } from '../errors.js';
import { html } from '../html.js';
import { snapshotHistory } from '../../verbs/queues/index.js';
import { shardOverview } from '../../verbs/scan/index.js';
import type { ConsoleDeps, ConsoleShards } from '../deps.js';
import type { ConsoleEnv } from '../env.js';
import { diffIndexBody } from '../pages/diff.js';
import { page } from '../pages/layout.js';
import { overviewBody } from '../pages/overview.js';
import { backlogSection } from '../pages/queues.js';
import { findingsBody } from '../pages/queue-actions.js';
import { pickShardBody, shardTableBody } from '../pages/shards.js';
import { refreshOf, verdictBody } from '../pages/verdict.js';
import { frameFor, type RouteState } from './shared.js';

/** The pages a shard's console serves: asked for at the top level, they offer each shard. */
const PER_SHARD = ['/tasks', '/tasks/*', '/bulk/*', '/audit'];

/**
 * The top level of a sharded console: the overview merged over every shard (counts add; each
 * shard's own figures in a table linking into its console), the verdict of `report` over the
 * shards, the diff page (off, saying why), and a page offering each shard for every per-shard page.
 */
export function shardedRoutes(
  app: Hono<ConsoleEnv>,
  deps: ConsoleDeps,
  sharded: ConsoleShards,
  state: RouteState,
): void {
  const names = sharded.shards.map((s) => s.name);

  app.get('/', async (c) => {
    const overview = await shardOverview(
      sharded.shards.map((s) => ({ name: s.name, source: s.deps.source })),
      { stuckAfterMs: deps.stuckAfterMs, concurrency: sharded.concurrency },
    );
    const refresh = refreshOf(c.req.query('refresh'));
    // A shard that stops answering while the console runs leaves the overview up, saying so.
    const verdict = deps.verdict
      ? await deps.verdict().then(
          (report) => verdictBody(report, refresh),
          (error: unknown) =>
            html`<p class="flash error" id="verdict-error">
              No verdict now: ${describeForPage(error).message}
            </p>`,
        )
      : '';
    const csrf = deps.readOnly ? undefined : c.get('csrf');
    const nowEpoch = await deps.source.db.nowEpoch().catch(() => Math.floor(Date.now() / 1000));
    const inspected = deps.queues ? await deps.queues.inspect(nowEpoch).catch(() => undefined) : undefined;
    const findings = inspected ? findingsBody(inspected.findings, csrf) : '';
    const history = await snapshotHistory(deps.source.db, nowEpoch).catch(() => []);
    // Trends need every shard's buckets: a shard that does not answer leaves the charts out, saying so.
    const trends =
      overview.nowEpoch === undefined
        ? undefined
        : await sharded.trends(overview.nowEpoch).catch(() => undefined);
    const merged = overview.summary
      ? overviewBody({
          summary: overview.summary,
          byBizType: overview.byBizType,
          notes: [
            ...overview.notes,
            `Totals of ${overview.shards.filter((s) => s.summary).length} shards, each counted on its own clock${trends ? '' : '; no trend charts while a shard does not answer'}.`,
          ],
          trends: trends ?? [],
        })
      : html`<p class="flash error">No shard answered.</p>`;
    const body = html`${verdict}${findings}${merged}${shardTableBody(overview, sharded.missing)}${backlogSection(history)}`;
    return c.html(
      page(frameFor(c, deps, state, { title: 'Overview', nav: 'overview', refreshSeconds: refresh }), body),
    );
  });

  for (const path of PER_SHARD)
    app.get(path, (c) => {
      const url = new URL(c.req.url);
      const list = url.searchParams.get('list');
      const nav =
        list === 'failed' || list === 'stuck' || list === 'due'
          ? list
          : url.pathname.startsWith('/audit')
            ? 'audit'
            : '';
      const frame = frameFor(c, deps, state, { title: 'Pick a shard', nav });
      return c.html(page(frame, pickShardBody(names, `${url.pathname}${url.search}`)));
    });

  app.get('/diff', (c) => {
    const frame = frameFor(c, deps, state, { title: 'Diff', nav: 'diff' });
    return c.html(page(frame, diffIndexBody([], deps.diff?.problem)));
  });
}
