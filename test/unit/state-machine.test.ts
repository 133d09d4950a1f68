import { describe, expect, it } from 'vitest';
import { checkTransition, TRANSITIONS, type TransitionName } from '../../src/core/state-machine.js';
import { LOGICAL_STATUSES } from '../../src/core/task.js';

describe('state machine', () => {
  it('allows each transition only from the states it names', () => {
    for (const name of Object.keys(TRANSITIONS) as TransitionName[]) {
      for (const from of LOGICAL_STATUSES) {
        const expected = (TRANSITIONS[name].from as readonly string[]).includes(from);
        expect(checkTransition(name, from).allowed, `${name} from ${from}`).toBe(expected);
      }
    }
  });

  it('refuses to mark a successful task compensated, saying why', () => {
    const check = checkTransition('mark-compensated', 'success');
    expect(check.allowed).toBe(false);
    expect(check.reason).toContain('this task is success');
  });

  it('never leaves a final state except by an operator', () => {
    for (const rule of Object.values(TRANSITIONS)) {
      if (
        (rule.from as readonly string[]).some((s) => s === 'success' || s === 'failed' || s === 'compensated')
      ) {
        expect(rule.actor).toBe('operator');
      }
    }
  });
});
