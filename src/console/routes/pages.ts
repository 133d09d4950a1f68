import type { Hono } from 'hono';
import { backlogSection, queuesBody } from '../pages/queues.js';
import { html } from '../html.js';
import { auditPage } from '../../verbs/audit/index.js';
import { snapshotHistory } from '../../verbs/queues/index.js';
import { allTrends } from '../../verbs/report/index.js';
import { capabilityNotes, listErrors, listPage, listStatus, scanSummary } from '../../verbs/scan/index.js';
import { showTask } from '../../verbs/show/index.js';
import { effectsOf } from '../../verbs/compensate/index.js';
import { existingTaskLinks } from '../audit-links.js';
import { sampleTasks } from '../bulk-sample.js';
import type { ConsoleDeps } from '../deps.js';
import type { ConsoleEnv } from '../env.js';
import { decodeCursor, encodeCursor, listFilter, PAGE_SIZE, parseListQuery } from '../filters.js';
import { notFoundPage } from '../errors.js';
import { auditBody } from '../pages/audit.js';
import { bulkBody } from '../pages/bulk.js';
import { detailBody } from '../pages/detail.js';
import { diffIndexBody, diffRuleBody } from '../pages/diff.js';
import { page } from '../pages/layout.js';
import { listBody } from '../pages/list.js';
import { overviewBody } from '../pages/overview.js';
import { refreshOf, verdictBody } from '../pages/verdict.js';
import { errorGroupsBody, groupSortOf } from '../pages/error-groups.js';
import { findingsBody } from '../pages/queue-actions.js';
import { actionsFor, frameFor, type RouteState } from './shared.js';

const AUDIT_PAGE = 50;

/** Every page the console shows: reads only. */
export function pageRoutes(app: Hono<ConsoleEnv>, deps: ConsoleDeps, state: RouteState): void {
  const { source } = deps;

  app.get('/', async (c) => {
    const nowEpoch = await source.db.nowEpoch();
    const [head, trends] = await Promise.all([
      scanSummary(source, { nowEpoch, stuckAfterMs: deps.stuckAfterMs, limit: 0 }),
      allTrends(source, nowEpoch),
    ]);
    const history = await snapshotHistory(source.db, nowEpoch);
    const refresh = refreshOf(c.req.query('refresh'));
    const verdict = deps.verdict ? verdictBody(await deps.verdict(), refresh) : '';
    const csrf = deps.readOnly ? undefined : c.get('csrf');
    // A broker that cannot be read does not hide the overview: the verdict names it (unreachable).
    const inspected = deps.queues ? await deps.queues.inspect(nowEpoch).catch(() => undefined) : undefined;
    const findings = inspected ? findingsBody(inspected.findings, csrf) : '';
    const body = html`${verdict}${findings}${overviewBody({ ...head, trends })}${backlogSection(history)}`;
    return c.html(
      page(frameFor(c, deps, state, { title: 'Overview', nav: 'overview', refreshSeconds: refresh }), body),
    );
  });

  app.get('/tasks', async (c) => {
    const params = new URL(c.req.url).searchParams;
    const query = parseListQuery(params);
    const nowEpoch = await source.db.nowEpoch();
    const filter = listFilter(query, nowEpoch, deps.stuckAfterMs);
    const title = `${query.list[0]?.toUpperCase()}${query.list.slice(1)} tasks`;
    const frame = frameFor(c, deps, state, { title, nav: query.list });
    const bulkActions = actionsFor(deps, listStatus(query.list));
    const cursor = decodeCursor(params.get('after') ?? undefined);
    const found = await listPage(source, filter, cursor, PAGE_SIZE);
    if (!found) {
      const notes = capabilityNotes(source);
      const why = (query.list === 'due' ? notes.due : notes.stuck) ?? `this table has no ${query.list} list`;
      return c.html(
        page(
          frame,
          listBody({
            query,
            tasks: [],
            next: undefined,
            first: true,
            bulkActions: [],
            csrf: frame.csrf,
            unavailable: why,
          }),
        ),
      );
    }
    const body = listBody({
      query,
      tasks: found.tasks,
      next: found.next && encodeCursor(found.next),
      first: cursor === undefined,
      bulkActions,
      csrf: frame.csrf,
    });
    // The failed list's total and its errors grouped, on its first page.
    const errors =
      query.list === 'failed' && cursor === undefined ? await listErrors(source, filter) : undefined;
    const groups = errors
      ? errorGroupsBody(query, errors, groupSortOf(params.get('gsort') ?? undefined))
      : '';
    return c.html(page(frame, html`${groups}${body}`));
  });

  app.get('/tasks/:id', async (c) => {
    const shown = await showTask(source, c.req.param('id'));
    const frame = frameFor(c, deps, state, { title: `Task ${shown.task.id}`, nav: '' });
    const actions = actionsFor(deps, shown.task.status);
    const gate = actions.includes('retry') ? deps.effects?.(false) : undefined;
    // A rule that cannot be read leaves the page as it was; the retry itself then says what is wrong.
    const effect = gate
      ? (await effectsOf(source, gate, [shown.task.id]).catch(() => undefined))?.get(String(shown.task.id))
      : undefined;
    const body = detailBody({
      shown,
      actions,
      csrf: frame.csrf,
      effect,
      confirmEffect: c.req.query('confirm') === 'effect',
    });
    return c.html(page(frame, body));
  });

  app.get('/bulk/:id', async (c) => {
    const run = state.bulk.get(c.req.param('id'));
    if (!run) return notFoundPage(c);
    const sample = run.state === 'preview' ? await sampleTasks(source, run.ids) : [];
    const gate = run.action === 'retry' && sample.length ? deps.effects?.(false) : undefined;
    const effects = gate
      ? await effectsOf(
          source,
          gate,
          sample.map((t) => t.id),
        ).catch(() => undefined)
      : undefined;
    const frame = frameFor(c, deps, state, {
      title: 'Bulk action',
      nav: run.query.list,
      refreshSeconds: run.state === 'running' ? 1 : undefined,
    });
    return c.html(page(frame, bulkBody(run, sample, frame.csrf, effects)));
  });

  app.get('/audit', async (c) => {
    const q = (name: string) => (c.req.query(name) ?? '').trim();
    const query = {
      operator: q('operator'),
      action: q('action'),
      task: q('task'),
      run: q('run'),
      source: q('source'),
    };
    const before = Number(q('before'));
    const { entries, older } = await auditPage(
      source.db,
      {
        source: query.source || undefined,
        operator: query.operator || undefined,
        action: query.action || undefined,
        taskId: query.task || undefined,
        runId: query.run || undefined,
      },
      Number.isSafeInteger(before) && before > 0 ? before : undefined,
      AUDIT_PAGE,
    );
    const frame = frameFor(c, deps, state, { title: 'Audit log', nav: 'audit' });
    const linked = await existingTaskLinks(source, entries);
    return c.html(page(frame, auditBody(query, entries, older, linked)));
  });

  queuesRoute(app, deps, state);

  app.get('/diff', (c) => {
    const frame = frameFor(c, deps, state, { title: 'Diff', nav: 'diff' });
    const diff = deps.diff;
    return c.html(
      page(
        frame,
        diffIndexBody(diff?.names ?? [], diff ? diff.problem : 'Diff rules are not available here.'),
      ),
    );
  });

  app.get('/diff/:name', async (c) => {
    const diff = deps.diff;
    const name = c.req.param('name');
    if (!diff || !diff.names.includes(name)) return notFoundPage(c);
    const result = await diff.run(name);
    const frame = frameFor(c, deps, state, { title: `Diff: ${name}`, nav: 'diff' });
    return c.html(page(frame, diffRuleBody(result)));
  });
}

/** The queues page: per broker, so a sharded console serves it once, at the top level. */
export function queuesRoute(app: Hono<ConsoleEnv>, deps: ConsoleDeps, state: RouteState): void {
  const { source } = deps;
  app.get('/queues', async (c) => {
    if (!deps.queues) return notFoundPage(c);
    const nowEpoch = await source.db.nowEpoch();
    const [result, history] = await Promise.all([
      deps.queues.inspect(nowEpoch),
      snapshotHistory(source.db, nowEpoch),
    ]);
    const frame = frameFor(c, deps, state, { title: 'Queues', nav: 'queues' });
    return c.html(page(frame, queuesBody(result, history, deps.readOnly ? undefined : frame.csrf)));
  });
}
