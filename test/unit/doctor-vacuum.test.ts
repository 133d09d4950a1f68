import { describe, expect, it } from 'vitest';
import type { TableBloat } from '../../src/db/port/index.js';
import {
  BLOAT_DEAD_SHARE,
  BLOAT_MIN_DEAD_ROWS,
  bloatCheck,
  longTransactionCheck,
} from '../../src/verbs/doctor/vacuum.js';

const bloat = (deadRows: number, liveRows: number, more: Partial<TableBloat> = {}): TableBloat => ({
  deadRows,
  liveRows,
  lastVacuumEpoch: null,
  lastAutovacuumEpoch: 1_000 - 3_600,
  autovacuumDisabled: false,
  tuneStatement: 'TUNE;',
  vacuumStatement: 'VACUUM;',
  ...more,
});

describe("doctor's vacuum checks", () => {
  it('warns only past both the share of live rows and the row floor', () => {
    expect(BLOAT_DEAD_SHARE).toBe(0.2);
    expect(BLOAT_MIN_DEAD_ROWS).toBe(10_000);
    expect(bloatCheck('t', bloat(10_000, 1_000), 1_000).status).toBe('ok');
    expect(bloatCheck('t', bloat(10_001, 1_000_000), 1_000).status).toBe('ok');
    const warn = bloatCheck('t', bloat(20_001, 100_000), 1_000);
    expect(warn.status).toBe('warn');
    expect(warn.message).toMatch(/^t: 20,001 dead row versions \(20% of 100,000 live\), more than 20%/);
    expect(warn.message).toContain('last vacuum never, last autovacuum 1h ago');
    expect(warn.hint).toContain('TUNE;');
    expect(warn.hint).toContain('VACUUM;');
  });

  it('lists the oldest three long transactions and counts the rest', () => {
    const t = (pid: number) => ({
      pid,
      ageSeconds: 700,
      state: 'idle in transaction',
      user: 'app',
      application: null,
      query: 'SELECT 1',
    });
    expect(longTransactionCheck([], 600)).toMatchObject({
      status: 'ok',
      message: 'no transaction on this database has been open longer than 10m',
    });
    const warn = longTransactionCheck([t(1), t(2), t(3), t(4)], 600);
    expect(warn.status).toBe('warn');
    expect(warn.message).toMatch(/^4 transactions open longer than 10m hold back vacuum: pid 1, open 11m40s/);
    expect(warn.message).toContain('; and 1 more.');
    expect(warn.message).not.toContain('pid 4');
  });
});
