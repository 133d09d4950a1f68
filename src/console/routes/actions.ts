import type { Hono } from 'hono';
import { randomUUID } from 'node:crypto';
import { usageError } from '../../errors.js';
import {
  compensate,
  COMPENSATE_ACTIONS,
  type CompensateAction,
  compensateFrozen,
  type CompensateRequest,
  effectRows,
} from '../../verbs/compensate/index.js';
import { listIds, listStatus } from '../../verbs/scan/index.js';
import { parseTaskId } from '../../verbs/show/index.js';
import { MAX_FROZEN } from '../bulk.js';
import type { ConsoleDeps } from '../deps.js';
import type { ConsoleEnv } from '../env.js';
import { listFilter, parseListQuery } from '../filters.js';
import { notFoundPage } from '../errors.js';
import { ACTION_LABELS } from '../pages/actions.js';
import { actionsFor, type RouteState } from './shared.js';
import { grouped } from '../../core/grouped.js';

/** The shortest reason accepted: the audit log must say why. */
const MIN_REASON = 3;

function field(form: Record<string, unknown>, name: string): string {
  const v = form[name];
  return typeof v === 'string' ? v.trim() : '';
}

function actionOf(form: Record<string, unknown>): CompensateAction {
  const action = field(form, 'action');
  if (!(COMPENSATE_ACTIONS as readonly string[]).includes(action))
    throw usageError(`unknown action '${action}'`, `One of: ${COMPENSATE_ACTIONS.join(', ')}.`);
  return action as CompensateAction;
}

function reasonOf(form: Record<string, unknown>): string {
  const reason = field(form, 'reason');
  if (reason.length < MIN_REASON)
    throw usageError(
      'a reason is required',
      'Say why in the reason field: it goes to the audit log with your name.',
    );
  return reason;
}

/** The state changes: one task, or a frozen preview of a filtered list. Every one is a POST past the guards. */
export function actionRoutes(app: Hono<ConsoleEnv>, deps: ConsoleDeps, state: RouteState): void {
  const { source } = deps;
  const request = (action: CompensateAction, reason: string): Omit<CompensateRequest, 'ids'> => ({
    action,
    operator: deps.operator,
    host: deps.host,
    reason,
    dryRun: false,
    runId: randomUUID(),
    filter: {},
    limit: 0,
  });

  /** A retry's effect check (the second confirmation of the detail page forces it, audited). */
  const effects = (action: CompensateAction, force: boolean) => {
    const gate = action === 'retry' ? deps.effects?.(force) : undefined;
    return gate ? { effects: gate } : {};
  };

  app.post('/tasks/:id/actions', async (c) => {
    const form = await c.req.parseBody();
    const action = actionOf(form);
    if (action === 'forget' && actionsFor(deps, 'failed').includes('forget')) {
      // Forget deletes: one task goes through the preview a bulk Forget does (frozen, a reason, apply).
      const frozen = state.bulk.freeze(action, parseListQuery({ list: 'failed' }), [
        parseTaskId(source, c.req.param('id')),
      ]);
      return c.redirect(`/bulk/${frozen.id}`, 303);
    }
    const reason = reasonOf(form);
    const id = parseTaskId(source, c.req.param('id'));
    const force = field(form, 'force-effect') === 'yes';
    const result = await compensate(source, {
      ...request(action, reason),
      ids: [id],
      ...effects(action, force),
    });
    const item = result.results[0];
    const applied = item?.outcome === 'applied';
    const refusedEffect = !applied && (result.effect?.refused ?? 0) > 0 ? item?.effect : undefined;
    const effectRefused = refusedEffect !== undefined;
    const flash = state.flashes.put({
      kind: applied ? 'ok' : 'error',
      text: applied
        ? `${ACTION_LABELS[action]}: task ${String(id)} ${item?.from} → ${item?.to}, audited as ${deps.operator}${force && result.effect?.forced ? ', retried although its effect is there (audited as effect-forced)' : ''}.`
        : refusedEffect
          ? `Retry refused for task ${String(id)}: its effect is already there (${refusedEffect.state}): ${effectRows(refusedEffect)}. A retry could apply it again. The refusal is audited; if the row is wrong or gone, confirm below.`
          : `${ACTION_LABELS[action]} not applied to task ${String(id)}: ${item?.reason ?? item?.outcome ?? 'nothing to do'}.`,
    });
    const target =
      action === 'forget' && applied
        ? `/audit?task=${encodeURIComponent(String(id))}`
        : `/tasks/${encodeURIComponent(String(id))}${effectRefused ? '?confirm=effect' : ''}`;
    return c.redirect(`${target}${target.includes('?') ? '&' : '?'}flash=${flash}`, 303);
  });

  app.post('/bulk', async (c) => {
    const form = await c.req.parseBody();
    const action = actionOf(form);
    const query = parseListQuery(form);
    const nowEpoch = await source.db.nowEpoch();
    const filter = listFilter(query, nowEpoch, deps.stuckAfterMs);
    const ids = actionsFor(deps, listStatus(query.list)).includes(action)
      ? await listIds(source, filter, MAX_FROZEN)
      : undefined;
    if (!ids) throw usageError(`${action} does not apply to the ${query.list} list of this table`);
    if (ids.length > MAX_FROZEN)
      throw usageError(
        `more than ${grouped(MAX_FROZEN)} tasks match`,
        'Narrow the filter (biz type, error text, time), or run `taskrecon compensate` with the same filters.',
      );
    const run = state.bulk.freeze(action, query, ids);
    return c.redirect(`/bulk/${run.id}`, 303);
  });

  app.post('/bulk/:id/apply', async (c) => {
    const run = state.bulk.get(c.req.param('id'));
    if (!run) return notFoundPage(c);
    const reason = reasonOf(await c.req.parseBody());
    state.bulk.start(run, reason, (r, onProgress) =>
      compensateFrozen(source, {
        ...request(r.action, reason),
        runId: r.runId as string,
        ids: r.ids,
        ...effects(r.action, false),
        shouldStop: () => state.bulk.stopping,
        onProgress: (done, _total, applied) => onProgress(done, applied),
      }),
    );
    return c.redirect(`/bulk/${run.id}`, 303);
  });
}
