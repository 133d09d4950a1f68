import type { Hono } from 'hono';
import { usageError } from '../../errors.js';
import type { ConsoleDeps } from '../deps.js';
import type { ConsoleEnv } from '../env.js';
import { page } from '../pages/layout.js';
import { queuePreviewBody, type QueueActionTarget } from '../pages/queue-actions.js';
import { frameFor, type RouteState } from './shared.js';

/** The shortest reason accepted: the audit log must say why. */
const MIN_REASON = 3;

function text(form: Record<string, unknown>, name: string): string {
  const v = form[name];
  return typeof v === 'string' ? v.trim() : '';
}

/** The action a form names, checked: a configured broker, a move's two different queues. */
function targetOf(form: Record<string, unknown>, brokers: readonly string[]): QueueActionTarget {
  const kind = text(form, 'kind');
  if (kind !== 'recover' && kind !== 'move')
    throw usageError(`unknown queue action '${kind}'`, 'One of: recover, move.');
  const broker = text(form, 'broker');
  if (!brokers.includes(broker))
    throw usageError(`no broker '${broker}' is configured`, `One of: ${brokers.join(', ')}.`);
  const target = { kind, broker, queue: text(form, 'queue'), to: text(form, 'to') } as const;
  if (kind === 'move' && (target.queue === '' || target.to === ''))
    throw usageError(
      'a move needs the queue the jobs come from and the one they go to',
      'Fill in "to queue".',
    );
  return target;
}

/** Recover and Move on the brokers' queues: a dry-run preview, then the run with a reason. POSTs past the guards. */
export function queueActionRoutes(app: Hono<ConsoleEnv>, deps: ConsoleDeps, state: RouteState): void {
  const queues = deps.queues;
  if (!queues) return;
  const run = (t: QueueActionTarget, dryRun: boolean, reason?: string) => {
    const actor = { operator: deps.operator, dryRun, reason };
    return t.kind === 'recover'
      ? queues.recover(t.broker, t.queue || undefined, actor)
      : queues.move(t.broker, t.queue, t.to, actor);
  };

  app.post('/queues/preview', async (c) => {
    const target = targetOf(await c.req.parseBody(), queues.names);
    const dry = await run(target, true);
    const frame = frameFor(c, deps, state, { title: 'Queue action', nav: 'queues' });
    return c.html(page(frame, queuePreviewBody(target, dry, frame.csrf)));
  });

  app.post('/queues/apply', async (c) => {
    const form = await c.req.parseBody();
    const target = targetOf(form, queues.names);
    const reason = text(form, 'reason');
    if (reason.length < MIN_REASON)
      throw usageError(
        'a reason is required',
        'Say why in the reason field: it goes to the audit log with your name.',
      );
    const done = await run(target, false, reason);
    const flash = state.flashes.put({
      kind: 'ok',
      text: `${target.kind === 'recover' ? 'Recovered' : 'Moved'} ${done.moved} of ${done.matched} jobs on ${target.broker}, audited as ${deps.operator} (run ${done.runId.slice(0, 8)}).`,
    });
    return c.redirect(`/queues?flash=${flash}`, 303);
  });
}
