import { describe, expect, it } from 'vitest';
import { defaultOperator } from '../../src/ops/operator.js';

describe('defaultOperator', () => {
  it('is TASKRECON_OPERATOR when set, for the console and every command alike', () => {
    expect(defaultOperator({ TASKRECON_OPERATOR: ' alice@ops ' })).toBe('alice@ops');
  });

  it('is OS user@host when TASKRECON_OPERATOR is unset or blank', () => {
    expect(defaultOperator({})).toMatch(/^.+@.+$/);
    expect(defaultOperator({ TASKRECON_OPERATOR: '  ' })).toBe(defaultOperator({}));
  });
});

describe('defaultOperator with a configured operator', () => {
  it("takes the config's operator under TASKRECON_OPERATOR", () => {
    expect(defaultOperator({}, 'bob')).toBe('bob');
    expect(defaultOperator({ TASKRECON_OPERATOR: 'alice' }, 'bob')).toBe('alice');
  });
});
