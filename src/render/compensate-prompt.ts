import { checkbox, confirm, input, select } from '@inquirer/prompts';
import type { Task, TaskId } from '../core/task.js';
import { ACTION_RULES, COMPENSATE_ACTIONS, type CompensateAction } from '../verbs/compensate/index.js';
import { renderTaskList } from './scan.js';
import { oneLine } from './terminal.js';

/**
 * The interactive picker of `compensate` (a TTY without --yes): choose the action, see a table of the
 * tasks it would move with their error summaries, pick tasks, look at any task in full, type a reason,
 * confirm (default no). Returns undefined when the operator says no ('none' when nothing matches):
 * nothing is written then.
 */
export interface PickerInput {
  /** The matches an action would move (the first few) and how many there are in all. */
  load(action: CompensateAction): Promise<{ tasks: Task[]; matched: number }>;
  action?: CompensateAction;
  preselected: boolean;
  reason?: string;
  reasonRequired: boolean;
  sourceName: string;
  /** Renders one task in full (the `show` view). */
  detail(id: TaskId): Promise<string>;
}

export interface PickerChoice {
  ids: TaskId[];
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
      choices: COMPENSATE_ACTIONS.map((a) => ({ value: a, name: `${a} — ${ACTION_RULES[a].summary}` })),
    }));
  const { tasks, matched } = await options.load(action);
  if (tasks.length === 0) return 'none';
  const shown =
    matched > tasks.length
      ? ` — ${tasks.length} of ${matched.toLocaleString('en-US')} shown (narrow with filters or --limit)`
      : '';
  write(renderTaskList(`Matching tasks in ${options.sourceName}${shown}`, tasks));
  const ids = await checkbox<TaskId>({
    message: `Tasks to ${action} (space toggles, a toggles all, enter accepts)`,
    choices: tasks.map((t) => ({
      value: t.id,
      checked: options.preselected,
      name: `${String(t.id).padEnd(8)} ${(t.bizType ?? '').padEnd(14).slice(0, 14)} ${t.status.padEnd(11)} ${oneLine(t.lastError, 60)}`,
    })),
    pageSize: 15,
    required: true,
  });
  for (;;) {
    const next = await select<'continue' | 'detail'>({
      message: `${ids.length} task(s) picked`,
      choices: [
        { value: 'continue', name: 'Continue' },
        { value: 'detail', name: "See a task's detail" },
      ],
    });
    if (next === 'continue') break;
    const id = await select<TaskId>({
      message: 'Which task',
      choices: ids.map((value) => ({ value, name: String(value) })),
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
  const yes = await confirm({
    message: `Apply ${action} to ${ids.length} task(s) of ${options.sourceName}?`,
    default: false,
  });
  if (!yes) return undefined;
  return { ids, action, reason: reason.trim() === '' ? null : reason.trim() };
}
