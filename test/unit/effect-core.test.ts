import { describe, expect, it } from 'vitest';
import { classifyTask, roleOf, type ExpectMode } from '../../src/core/diff.js';
import {
  combineEffects,
  effectBlocksRetry,
  effectRefusal,
  NO_RULE,
  ruleEffectState,
  type RuleEffect,
} from '../../src/core/effect.js';

const rule = (expect: ExpectMode = 'exactly-one') => ({
  taskStatus: ['success' as const],
  business: { table: 'user_coupon', key: 'order_id', expect, orphans: true },
});
const effect = (state: RuleEffect['state'], rows: number): RuleEffect => ({
  rule: 'coupon-issued',
  table: 'user_coupon',
  key: 'order_id',
  value: 'PAY1',
  rows,
  state,
});

describe('the effect of a task before a retry', () => {
  it('a failed task: no row is missing, one row is present, two rows are duplicated', () => {
    const facts = (rows: number) => ({ rows, tasks: 1, doneTasks: 0 });
    expect(ruleEffectState('failed', facts(0), rule())).toBe('missing');
    expect(ruleEffectState('failed', facts(1), rule())).toBe('present');
    expect(ruleEffectState('failed', facts(2), rule())).toBe('duplicated');
    // at-least-one allows extra rows: still present, never duplicated.
    expect(ruleEffectState('failed', facts(2), rule('at-least-one'))).toBe('present');
  });

  it('agrees with diff: present is its unsettled, duplicated its duplicate', () => {
    for (const rows of [0, 1, 2, 3])
      for (const [tasks, doneTasks] of [
        [1, 0],
        [2, 1],
        [3, 2],
      ] as const) {
        const facts = { rows, tasks, doneTasks };
        const state = ruleEffectState('failed', facts, rule());
        const diff = classifyTask(roleOf('failed', ['success']), facts, 'exactly-one');
        // diff calls an open task with more rows than its done siblings unsettled.
        expect(state === 'missing', `rows ${rows} tasks ${tasks} done ${doneTasks}`).toBe(diff === undefined);
        if (state === 'duplicated') expect(rows).toBeGreaterThan(Math.max(1, tasks));
      }
  });

  it('a row its done sibling accounts for is no effect of this task', () => {
    // Two tasks share the key, one succeeded and wrote the one row: retrying the failed one is not a repeat.
    expect(ruleEffectState('failed', { rows: 1, tasks: 2, doneTasks: 1 }, rule())).toBe('missing');
  });

  it('the worst rule wins; no rule is no-rule; only present and duplicated block a retry', () => {
    expect(combineEffects([])).toBe(NO_RULE);
    expect(combineEffects([effect('missing', 0), effect('present', 1)]).state).toBe('present');
    expect(combineEffects([effect('present', 1), effect('duplicated', 2)]).state).toBe('duplicated');
    expect(effectBlocksRetry(combineEffects([effect('missing', 0)]))).toBe(false);
    expect(effectBlocksRetry(NO_RULE)).toBe(false);
    expect(effectBlocksRetry(combineEffects([effect('present', 1)]))).toBe(true);
    expect(effectBlocksRetry(combineEffects([effect('duplicated', 2)]))).toBe(true);
  });

  it('the refusal names the rows found and how to go on', () => {
    expect(effectRefusal(combineEffects([effect('duplicated', 2)]), '--force-effect')).toBe(
      "effect duplicated: 2 rows in user_coupon where order_id = 'PAY1' (rule coupon-issued); a retry could apply it again (--force-effect to retry anyway)",
    );
  });
});
