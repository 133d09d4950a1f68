import { classifyTask, type TaskRole } from '../../../core/diff.js';
import { normalizeKey } from '../../../core/diff-keys.js';
import { store, ROLE_DONE, ROLE_OPEN, type CandidateRow } from '../../../db/port/index.js';
import type { Queryable } from '../../../db/types.js';
import type { SameServerPlan } from '../plan.js';
import { taskFinding } from './findings.js';
import type { WalkOptions } from './workers.js';

/** Keys per IN list (sibling lookups, tasks of duplicated keys): bound parameters of one statement. */
export const KEYS_PER_LOOKUP = 500;

/** The role of a task from its role code (TaskSide.role: 1 done, 2 open, 0 other). */
export function roleOfCode(code: unknown): TaskRole {
  const n = Number(code);
  return n === ROLE_DONE ? 'done' : n === ROLE_OPEN ? 'open' : 'other';
}

/**
 * Classifies tasks with business rows (open ones, or done ones with several rows), looking up
 * the other tasks of their keys (any status, any time): whether one is a finding depends on them.
 */
export async function emitClassified(
  q: Queryable,
  plan: SameServerPlan,
  role: 'done' | 'open',
  candidates: CandidateRow[],
  options: WalkOptions,
): Promise<void> {
  if (candidates.length === 0) return;
  const siblings = await siblingsOf(q, plan, candidates);
  for (const candidate of candidates) {
    const rows = Number(candidate.n);
    const ofKey =
      candidate.k === null
        ? undefined
        : siblings.get(normalizeKey(candidate.k, plan.taskSemantics) as string);
    const kind = classifyTask(
      role,
      {
        rows,
        tasks: ofKey?.tasks ?? 1,
        doneTasks: ofKey?.done ?? (role === 'done' ? 1 : 0),
      },
      plan.rule.business.expect,
    );
    if (kind) await options.emit(taskFinding(plan, kind, candidate, rows));
  }
}

/** The rule's tasks per key of `candidates` (normal form), and the done ones among them. */
async function siblingsOf(
  q: Queryable,
  plan: SameServerPlan,
  candidates: CandidateRow[],
): Promise<Map<string, { tasks: number; done: number }>> {
  const siblings = new Map<string, { tasks: number; done: number }>();
  const keyed = candidates.filter((c) => c.k !== null);
  const keys = [
    ...new Map(keyed.map((c) => [normalizeKey(c.k, plan.taskSemantics) as string, c.k])).values(),
  ];
  for (let i = 0; i < keys.length; i += KEYS_PER_LOOKUP) {
    for (const row of await store.diff.keySiblings(q, plan.task, keys.slice(i, i + KEYS_PER_LOOKUP))) {
      siblings.set(normalizeKey(row.k, plan.taskSemantics) as string, {
        tasks: Number(row.tasks),
        done: Number(row.done),
      });
    }
  }
  return siblings;
}
