import { checkTransition, TRANSITIONS, type TransitionName } from './state-machine.js';
import type { LogicalStatus, ProfileKind } from './task.js';

/**
 * What each manual action of `compensate` does, as pure rules (the classic task-table design): which states it
 * moves a task from, where to, and whether the table can do it at all. No I/O here.
 */
export const COMPENSATE_ACTIONS = ['retry', 'mark-compensated', 'mark-failed', 'forget'] as const;
export type CompensateAction = (typeof COMPENSATE_ACTIONS)[number];

/** `forget` removes the row; the audit row keeps all of it so it can be restored. */
export const DELETED = 'deleted';
export type ActionTarget = LogicalStatus | typeof DELETED;

export interface ActionRule {
  /** The state-machine transition it takes (none for forget, which deletes). */
  transition?: TransitionName;
  from: readonly LogicalStatus[];
  to: ActionTarget;
  summary: string;
}

export const ACTION_RULES: Record<CompensateAction, ActionRule> = {
  retry: {
    transition: 'manual-retry',
    from: TRANSITIONS['manual-retry'].from,
    to: 'pending',
    summary: 'back to pending, due now',
  },
  'mark-compensated': {
    transition: 'mark-compensated',
    from: TRANSITIONS['mark-compensated'].from,
    to: 'compensated',
    summary: 'fixed by hand: failed → compensated',
  },
  'mark-failed': {
    transition: 'mark-failed',
    from: TRANSITIONS['mark-failed'].from,
    to: 'failed',
    summary: 'give up: pending/processing → failed',
  },
  forget: { from: ['failed'], to: DELETED, summary: 'delete the failed row (the audit keeps it whole)' },
};

export function isCompensateAction(value: string): value is CompensateAction {
  return (COMPENSATE_ACTIONS as readonly string[]).includes(value);
}

/** What the source table is like, as far as the rules care. */
export interface TableTraits {
  profile: string;
  kind: ProfileKind;
  /** Logical statuses the table can hold. */
  statuses: readonly LogicalStatus[];
  /** For a job system: the actions its writer has an operation for (retry and forget when unsaid). */
  systemActions?: readonly string[];
}

/** Why this table cannot take this action at all (undefined when it can). */
export function actionUnsupported(action: CompensateAction, table: TableTraits): string | undefined {
  const rule = ACTION_RULES[action];
  if (table.kind === 'failed-jobs') {
    if (action === 'retry' || action === 'forget') return undefined;
    return `${table.profile} rows are failed jobs with no status column: ${action} cannot be stored there; use --action retry (re-push) or --action forget (delete, audited)`;
  }
  if (table.kind === 'job-system') {
    const actions = table.systemActions ?? ['retry', 'forget'];
    if (actions.includes(action)) return undefined;
    return `${table.profile} jobs are written as ${table.profile}'s own tools write them, which have no ${action} for a failed job: use ${actions.map((a) => `--action ${a}`).join(' or ')}`;
  }
  if (!rule.from.some((s) => table.statuses.includes(s))) {
    return `${table.profile} rows are never ${rule.from.join(' or ')}, so ${action} has nothing to move`;
  }
  if (rule.to !== DELETED && !table.statuses.includes(rule.to)) {
    return `${table.profile} has no '${rule.to}' status to write, so ${action} cannot be recorded (map it under \`statuses:\` in the source)`;
  }
  return undefined;
}

export type Decision =
  | { kind: 'apply'; from: LogicalStatus; to: ActionTarget }
  /** The row is already where the action leads (a rerun, or someone else did it): nothing to do. */
  | { kind: 'already'; from: LogicalStatus | 'unknown'; reason: string }
  | { kind: 'refused'; from: LogicalStatus | 'unknown'; reason: string };

/** What to do with one row in `status`. */
export function decide(action: CompensateAction, status: LogicalStatus | 'unknown'): Decision {
  const rule = ACTION_RULES[action];
  if ((rule.from as readonly string[]).includes(status))
    return { kind: 'apply', from: status as LogicalStatus, to: rule.to };
  if (status === rule.to) return { kind: 'already', from: status, reason: `already ${status}` };
  if (rule.transition) {
    const check = checkTransition(rule.transition, status);
    return {
      kind: 'refused',
      from: status,
      reason: check.reason ?? `${action} does not apply to a ${status} task`,
    };
  }
  return {
    kind: 'refused',
    from: status,
    reason: `${action} deletes failed rows only; this task is ${status}`,
  };
}

/** The statuses a filtered selection reads: the action's `from`, narrowed by --status. Empty = a usage error. */
export function selectableStatuses(
  action: CompensateAction,
  wanted: readonly LogicalStatus[] | undefined,
): LogicalStatus[] {
  const from = ACTION_RULES[action].from;
  return wanted?.length ? from.filter((s) => wanted.includes(s)) : [...from];
}
