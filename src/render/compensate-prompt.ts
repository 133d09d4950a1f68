import { checkbox, confirm, input, select } from '@inquirer/prompts';
import type { Task, TaskId } from '../core/task.js';
import type { BoundSource } from '../db/bind-source.js';
import {
  ACTION_RULES,
  COMPENSATE_ACTIONS,
  previewCandidates,
  supportedActions,
  type CompensateAction,
  type CompensateRequest,
} from '../verbs/compensate/index.js';
import { showTask } from '../verbs/show/index.js';
import { renderShow } from './show.js';
import { oneLine } from './terminal.js';
import { effectBlocksRetry, effectRows, type TaskEffect } from '../core/effect.js';

/** The picker lists at most this many tasks to page through; more is a job for "all matching" or filters. */
export const MAX_PICKABLE = 5000;
/** "All matching" freezes the ids of at most this many tasks; a larger selection acts on the filter. */
export const MAX_FROZEN = 20_000;

/**
 * The interactive picker of `compensate` (a TTY without --yes): choose the action, see a table of the
 * tasks it would move with their error summaries, pick tasks, look at any task in full, type a reason,
 * confirm (default no). Returns undefined when the operator says no ('none' when nothing matches):
 * nothing is written then.
 */
export interface PickerInput {
  /** The matches an action would move (the first `limit`, default a page) and how many there are in all. */
  load(
    action: CompensateAction,
    limit?: number,
  ): Promise<{ tasks: Task[]; matched: number; effects?: Map<string, TaskEffect> }>;
  /** --force-effect: tasks whose effect is there are retried too (audited). */
  forceEffect?: boolean;
  action?: CompensateAction;
  /** The actions the source's profile allows (the menu offers only these; default all). */
  actions?: readonly CompensateAction[];
  preselected: boolean;
  reason?: string;
  reasonRequired: boolean;
  sourceName: string;
  /** Renders one task in full (the `show` view). */
  detail(id: TaskId): Promise<string>;
}

export interface PickerChoice {
  /** The picked (or frozen "all matching") ids; undefined: every task the filter matches at run time. */
  ids: TaskId[] | undefined;
  action: CompensateAction;
  reason: string | null;
}

export async function pickInteractively(
  options: PickerInput,
  write: (text: string) => void,
): Promise<PickerChoice | 'none' | undefined> {
  const action =
    options.action ??
    (await select<CompensateAction>({
      message: 'Action',
      choices: (options.actions ?? COMPENSATE_ACTIONS).map((a) => ({
        value: a,
        name: `${a} — ${ACTION_RULES[a].summary}`,
      })),
    }));
  const first = await options.load(action);
  const { matched } = first;
  if (first.tasks.length === 0) return 'none';
  write(`Matching tasks in ${options.sourceName}: ${matched}`);
  let all = false;
  if (matched > first.tasks.length) {
    const how = await select<'all' | 'pick'>({
      message: `${matched} tasks match`,
      choices: [
        { value: 'all', name: `Select all ${matched} matching tasks` },
        {
          value: 'pick',
          name: `Pick from the list (${Math.min(matched, MAX_PICKABLE)} tasks, 15 a page)`,
        },
      ],
    });
    all = how === 'all';
  }
  let ids: TaskId[] | undefined;
  let count: number;
  let effects = first.effects;
  if (all) {
    // The selection is frozen here (the ids the confirmation counts), unless it is too large to hold.
    const frozen = matched <= MAX_FROZEN ? await options.load(action, matched) : undefined;
    ids = frozen?.tasks.map((t) => t.id);
    effects = frozen?.effects ?? effects;
    count = ids?.length ?? matched;
  } else {
    const listed =
      matched > first.tasks.length ? await options.load(action, Math.min(matched, MAX_PICKABLE)) : first;
    const tasks = listed.tasks;
    effects = listed.effects;
    ids = await checkbox<TaskId>({
      message: `Tasks to ${action} (space toggles, a toggles all, enter accepts)`,
      choices: tasks.map((t) => ({
        value: t.id,
        checked: options.preselected,
        name: `${String(t.id).padEnd(8)} ${(t.bizType ?? '').padEnd(14).slice(0, 14)} ${(t.bizId ?? '').padEnd(16).slice(0, 16)} ${t.status.padEnd(11)} ${effects ? `effect ${(effects.get(String(t.id))?.state ?? '?').padEnd(10)} ` : ''}${oneLine(t.lastError, 60)}`,
      })),
      pageSize: 15,
      loop: false,
      required: true,
    });
    count = ids.length;
  }
  for (; ids !== undefined && !all;) {
    const picked: TaskId[] = ids;
    const next = await select<'continue' | 'detail'>({
      message: `${picked.length} task(s) picked`,
      choices: [
        { value: 'continue', name: 'Continue' },
        { value: 'detail', name: "See a task's detail" },
      ],
    });
    if (next === 'continue') break;
    const id = await select<TaskId>({
      message: 'Which task',
      choices: picked.map((value) => ({ value, name: String(value) })),
    });
    write(await options.detail(id));
  }
  const reason =
    options.reason ??
    (await input({
      message: options.reasonRequired ? 'Reason (required)' : 'Reason (optional)',
      validate: (value) =>
        !options.reasonRequired || value.trim().length > 0
          ? true
          : 'a reason is required by the config (compensate.requireReason)',
    }));
  const blocked = effectWarning(ids, effects, options.forceEffect === true);
  if (blocked) write(blocked);
  const yes = await confirm({
    message: all
      ? `Apply ${action} to all ${count} matching tasks of ${options.sourceName}?`
      : `Apply ${action} to ${count} task(s) of ${options.sourceName}?`,
    default: false,
  });
  if (!yes) return undefined;
  return { ids, action, reason: reason.trim() === '' ? null : reason.trim() };
}

/** What the confirmation must know about picked tasks whose effect is already there. */
function effectWarning(
  ids: readonly TaskId[] | undefined,
  effects: Map<string, TaskEffect> | undefined,
  force: boolean,
): string | undefined {
  if (!ids || !effects) return undefined;
  const blocked = ids.flatMap((id) => {
    const effect = effects.get(String(id));
    return effect && effectBlocksRetry(effect)
      ? [`  ${String(id)}: ${effect.state}, ${effectRows(effect)}`]
      : [];
  });
  if (blocked.length === 0) return undefined;
  return force
    ? `--force-effect: ${blocked.length} picked task(s) have their effect already there and will be retried anyway (audited as effect-forced):\n${blocked.join('\n')}`
    : `${blocked.length} picked task(s) have their effect already there: they will not be retried (each audited as effect-refused; --force-effect retries them):\n${blocked.join('\n')}`;
}

/** How many matches the picker lists at most. */
const PICKER_ROWS = 100;

/** The picker over a compensate request on a source: its matches, the actions the profile allows, `show` for detail. */
export function pickForRequest(
  source: BoundSource,
  request: CompensateRequest,
  ask: { action?: CompensateAction; reasonRequired: boolean },
  write: (text: string) => void,
): Promise<PickerChoice | 'none' | undefined> {
  return pickInteractively(
    {
      load: (action, limit) => previewCandidates(source, { ...request, action }, limit ?? PICKER_ROWS),
      actions: supportedActions(source),
      action: ask.action,
      preselected: request.ids !== undefined,
      reason: request.reason ?? undefined,
      reasonRequired: ask.reasonRequired,
      forceEffect: request.effects?.force,
      sourceName: source.name,
      detail: async (id) => renderShow(await showTask(source, String(id)), { full: false }),
    },
    write,
  );
}

/** The picker, and its choice put into the request; false when nothing is to be done (said on `write`). */
export async function pickIntoRequest(
  source: BoundSource,
  request: CompensateRequest,
  ask: { action?: CompensateAction; reasonRequired: boolean },
  write: (text: string) => void,
): Promise<boolean> {
  const choice = await pickForRequest(source, request, ask, write);
  if (!choice || choice === 'none') {
    write(choice === 'none' ? 'No task matches: nothing to do.' : 'Nothing changed.');
    return false;
  }
  Object.assign(request, {
    ids: choice.ids,
    action: choice.action,
    reason: choice.reason,
    limit: 0,
    skipEffectRefusals: true,
  });
  return true;
}
