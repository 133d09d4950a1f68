import { roleOf, type DiffRule, type KeyFacts } from './diff.js';
import type { LogicalStatus } from './task.js';

/**
 * A task's effect, before it is retried: does the business row its diff rules expect already
 * exist? Pure: the counts come from the same lookups diff makes (business rows with the task's
 * key, and the rule's tasks sharing that key), and the verdict uses diff's own bookkeeping, so a
 * task diff calls `unsettled` is `present` here and one diff calls `duplicate` is `duplicated`.
 */

export const EFFECT_STATES = ['present', 'missing', 'duplicated', 'no-rule'] as const;
export type EffectState = (typeof EFFECT_STATES)[number];

/** What one rule found for one task. */
export interface RuleEffect {
  rule: string;
  /** The business table and key column the rule looks in. */
  table: string;
  key: string;
  /** The task's key value (null: the task has none, so no row can match). */
  value: string | null;
  /** Business rows with that key (the rule's `where` applied). */
  rows: number;
  state: Exclude<EffectState, 'no-rule'>;
}

export interface TaskEffect {
  state: EffectState;
  /** One entry per rule covering the task's biz type (empty: no rule). */
  rules: RuleEffect[];
}

export const NO_RULE: TaskEffect = { state: 'no-rule', rules: [] };

/**
 * One rule's verdict for one task:
 * - more rows than the tasks of the key account for → `duplicated` (diff's `duplicate`), unless
 *   the rule expects at least one row, where extra rows are allowed;
 * - an open (failed/pending) task with more rows than its key's done tasks → `present` (diff's
 *   `unsettled`: the effect happened although the task never said so);
 * - a done or other task with a row → `present`;
 * - otherwise → `missing`.
 */
export function ruleEffectState(
  status: LogicalStatus | 'unknown',
  facts: KeyFacts,
  rule: Pick<DiffRule, 'taskStatus' | 'business'>,
): RuleEffect['state'] {
  if (facts.rows === 0) return 'missing';
  if (facts.rows > Math.max(1, facts.tasks) && rule.business.expect !== 'at-least-one') return 'duplicated';
  if (roleOf(status, rule.taskStatus) === 'open') return facts.rows > facts.doneTasks ? 'present' : 'missing';
  return 'present';
}

/** The rules' verdicts together: the worst wins (duplicated, then present, then missing). */
export function combineEffects(rules: RuleEffect[]): TaskEffect {
  if (rules.length === 0) return NO_RULE;
  const state = rules.some((r) => r.state === 'duplicated')
    ? 'duplicated'
    : rules.some((r) => r.state === 'present')
      ? 'present'
      : 'missing';
  return { state, rules };
}

/** A retry would apply the effect again: present or duplicated. */
export function effectBlocksRetry(effect: TaskEffect): boolean {
  return effect.state === 'present' || effect.state === 'duplicated';
}

/** The business rows a retry would repeat, named for a person: `1 row in user_coupon where order_id = 'PAY1' (rule coupon-applied)`. */
export function effectRows(effect: TaskEffect): string {
  return effect.rules
    .filter((r) => r.rows > 0)
    .map(
      (r) =>
        `${r.rows} row${r.rows === 1 ? '' : 's'} in ${r.table} where ${r.key} = '${r.value ?? ''}' (rule ${r.rule})`,
    )
    .join('; ');
}

/** Why a retry was refused, and how to go on anyway. */
export function effectRefusal(effect: TaskEffect, force: string): string {
  return `effect ${effect.state}: ${effectRows(effect)}; a retry could apply it again (${force} to retry anyway)`;
}
