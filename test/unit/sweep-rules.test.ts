import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { sweepZoneProblem } from '../../src/core/sweep-config.js';
import { compileRules, decideRow, errorMatches, firstMatch, inScope } from '../../src/core/sweep-rules.js';
import { isKnownZone } from '../../src/core/sweep-window.js';

const RULES = [
  {
    name: 'sms',
    match: { bizType: 'app\\job\\SendPaidSmsJob' },
    action: 'retry',
    rate: '20/s',
    maxSweeps: 1,
  },
  {
    name: 'warehouse',
    match: { bizType: 'app\\job\\CreatePickTaskJob' },
    action: 'retry',
    window: '09:00-18:00',
    blackout: ['01:00-05:00'],
    maxSweeps: 2,
  },
  { name: 'schema', match: { errorLike: 'Unknown column' }, action: 'hold' },
];
const shanghai = (iso: string) => Date.parse(`${iso}+08:00`) / 1000;

function configError(sweeps: unknown, extra: Record<string, unknown> = {}): string {
  try {
    validateConfig({ sweeps, ...extra }, 'taskrecon.config.yaml');
  } catch (error) {
    return (error as Error).message;
  }
  return 'valid';
}

describe('sweep rules in the config', () => {
  it('accepts the rule set of the hourly sweep', () => {
    expect(configError(RULES, { appTimeZone: 'Asia/Shanghai' })).toBe('valid');
  });

  it('names the rule and key of an unknown action', () => {
    expect(configError([{ name: 'sms', action: 'retri' }])).toMatch(
      /sweeps\.0\.action: rule 'sms': action: 'retri' is not an action; use retry or hold/,
    );
  });

  it('rejects blackouts that cover the whole window', () => {
    const msg = configError([
      { name: 'wh', action: 'retry', window: '09:00-18:00', blackout: ['08:00-13:00', '12:00-19:00'] },
    ]);
    expect(msg).toMatch(
      /rule 'wh': window: the blackouts 08:00-13:00, 12:00-19:00 cover the whole window 09:00-18:00/,
    );
  });

  it('rejects a bad range, a bad rate, keys a hold rule cannot use, a duplicate name and a typo', () => {
    expect(configError([{ name: 'a', action: 'retry', window: '9-18' }])).toMatch(
      /rule 'a': window: '9-18' is not a daily range/,
    );
    expect(configError([{ name: 'a', action: 'retry', blackout: ['01:00-01:00'] }])).toMatch(
      /sweeps\.0\.blackout\.0: rule 'a': blackout: .*empty/,
    );
    expect(configError([{ name: 'a', action: 'retry', rate: 'fast' }])).toMatch(
      /rule 'a': rate: 'fast' is not a rate/,
    );
    expect(configError([{ name: 'a', action: 'hold', window: '09:00-18:00' }])).toMatch(
      /rule 'a': window: a hold rule retries nothing/,
    );
    expect(
      configError([
        { name: 'a', action: 'hold' },
        { name: 'a', action: 'hold' },
      ]),
    ).toMatch(/sweeps\.1\.name: rule 'a': name: another rule/);
    expect(configError([{ name: 'a', action: 'hold', match: { bizTyp: 'x' } }])).toMatch(
      /unknown key 'sweeps\.0\.match\.bizTyp'/,
    );
  });

  it('needs appTimeZone for a window, and a zone the runtime knows', () => {
    const rules = validateConfig({ sweeps: RULES }, 'c.yaml').sweeps;
    expect(sweepZoneProblem(rules, undefined, isKnownZone)).toMatch(
      /rule 'warehouse': window: .*needs appTimeZone/,
    );
    expect(sweepZoneProblem(rules, 'Mars/Olympus', isKnownZone)).toMatch(
      /appTimeZone 'Mars\/Olympus' is not a time zone/,
    );
    expect(sweepZoneProblem(rules, 'Asia/Shanghai', isKnownZone)).toBeUndefined();
    expect(sweepZoneProblem([RULES[0] as never], undefined, isKnownZone)).toBeUndefined();
  });
});

describe('the sweep policy', () => {
  const rules = compileRules(validateConfig({ sweeps: RULES }, 'c.yaml').sweeps, 'Asia/Shanghai');
  const facts = (bizType: string, lastError = 'timeout') => ({
    source: 'failed',
    bizType,
    lastError,
    queue: 'default',
  });

  it('takes the first matching rule', () => {
    expect(firstMatch(rules, facts('app\\job\\SendPaidSmsJob', 'Unknown column x'))?.name).toBe('sms');
    expect(firstMatch(rules, facts('app\\job\\Other', 'SQLSTATE: Unknown column "x"'))?.name).toBe('schema');
    expect(firstMatch(rules, facts('app\\job\\Other'))).toBeUndefined();
  });

  it('matches error text as contains, or as LIKE with wildcards, ignoring case', () => {
    expect(errorMatches('unknown column', 'SQLSTATE[42S22]: Unknown column')).toBe(true);
    expect(errorMatches('SQLSTATE[42S22]%column', 'SQLSTATE[42S22]: Unknown column')).toBe(true);
    expect(errorMatches('timeout%', 'SQLSTATE timeout')).toBe(false);
    expect(errorMatches('x', null)).toBe(false);
  });

  it('retries in the window, defers outside it with the time it opens, holds, and stops after maxSweeps', () => {
    const [sms, warehouse, schema] = rules as [never, never, never];
    expect(decideRow(warehouse, 0, shanghai('2026-12-01T10:00:00'))).toEqual({
      outcome: 'retry',
      eligibleAt: null,
    });
    expect(decideRow(warehouse, 0, shanghai('2026-12-01T02:00:00'))).toEqual({
      outcome: 'deferred',
      eligibleAt: shanghai('2026-12-01T09:00:00'),
    });
    expect(decideRow(warehouse, 1, shanghai('2026-12-01T10:00:00')).outcome).toBe('retry');
    expect(decideRow(warehouse, 2, shanghai('2026-12-01T10:00:00')).outcome).toBe('second-failure');
    expect(decideRow(sms, 1, shanghai('2026-12-01T02:00:00')).outcome).toBe('second-failure');
    expect(decideRow(schema, 5, 0)).toEqual({ outcome: 'held', eligibleAt: null });
  });

  it('looks back past the cutoff only for rows the previous sweep had to defer', () => {
    const [sms, warehouse] = rules as [never, never];
    const cutoff = shanghai('2026-12-01T08:30:00');
    expect(inScope(warehouse, shanghai('2026-12-01T02:00:00'), cutoff)).toBe(true);
    expect(inScope(warehouse, shanghai('2026-12-01T02:00:00'), shanghai('2026-12-01T10:30:00'))).toBe(false);
    expect(inScope(sms, shanghai('2026-12-01T02:00:00'), cutoff)).toBe(false);
    expect(inScope(sms, cutoff, cutoff)).toBe(true);
  });
});

describe('which sweep retries count towards maxSweeps', () => {
  it('a failed job counts retries of its earlier failed rows, never of the row itself (a concurrent sweep)', async () => {
    const { precedes } = await import('../../src/ops/sweep/plan.js');
    const audit = { identity: 'u1', taskId: '7', atEpoch: 1000.5 };
    expect(precedes(audit, { id: 9, failedAt: 1200 }, true)).toBe(true);
    expect(precedes(audit, { id: 7, failedAt: 900 }, true)).toBe(false);
  });

  it('a task counts retries made before it last failed, not one made after it was read', async () => {
    const { precedes } = await import('../../src/ops/sweep/plan.js');
    const audit = { identity: 'e1', taskId: '3', atEpoch: 1000.5 };
    expect(precedes(audit, { id: 3, failedAt: 1001 }, false)).toBe(true);
    expect(precedes(audit, { id: 3, failedAt: 1000 }, false)).toBe(false);
  });
});

describe('rules for BullMQ brokers', () => {
  const rules = compileRules(
    [
      { name: 'smtp', match: { broker: 'jobs', bizType: 'send-mail', errorLike: 'smtp' }, action: 'retry' },
      { name: 'any-row', action: 'retry' },
    ],
    undefined,
  );
  const job = {
    source: 'jobs',
    broker: 'jobs',
    bizType: 'send-mail',
    lastError: 'SMTP timeout',
    queue: 'mail',
  };

  it('a broker rule matches only the failed jobs of its brokers, by name and error', () => {
    expect(firstMatch(rules, job)?.name).toBe('smtp');
    expect(firstMatch(rules, { ...job, lastError: 'mailbox full' })).toBeUndefined();
    expect(firstMatch(rules, { ...job, bizType: 'send-sms' })).toBeUndefined();
    expect(firstMatch(rules, { ...job, broker: 'other', source: 'other' })).toBeUndefined();
  });

  it('a rule without broker never matches a broker job, and a broker rule never a table row', () => {
    const row = { source: 'failed', bizType: 'send-mail', lastError: 'SMTP timeout', queue: 'mail' };
    expect(firstMatch(rules, row)?.name).toBe('any-row');
    expect(firstMatch([rules[0] as (typeof rules)[number]], row)).toBeUndefined();
  });

  it('broker and source in one rule are refused, naming the rule', () => {
    expect(
      configError([{ name: 'x', match: { broker: 'jobs', source: 'failed' }, action: 'retry' }]),
    ).toContain(
      "rule 'x': match: a rule matches the rows of sources or the failed jobs of brokers, not both",
    );
  });
});
