import { describe, expect, it } from 'vitest';
import { replicaNote } from '../../src/db/replica.js';
import { indexServes } from '../../src/ops/full-scan.js';
import { replicaCheck } from '../../src/verbs/doctor/replica.js';

const index = (...columns: string[]) => ({ name: 'i', columns, unique: false });

describe('indexServes', () => {
  it('takes an index whose leading columns are the wanted ones, in order or, when allowed, in any order', () => {
    expect(indexServes(index('status', 'next_retry_time'), ['status'])).toBe(true);
    expect(indexServes(index('status', 'biz_type'), ['biz_type', 'status'], true)).toBe(true);
    expect(indexServes(index('biz_type', 'status', 'id'), ['status', 'biz_type'], true)).toBe(true);
    expect(indexServes(index('Created_At'), ['created_at'])).toBe(true);
  });

  it('refuses an index where a wanted column is not among the leading ones', () => {
    expect(indexServes(index('biz_type', 'biz_id'), ['status', 'biz_type'], true)).toBe(false);
    expect(indexServes(index('status', 'biz_type'), ['biz_type', 'status'])).toBe(false);
    expect(indexServes(index('next_retry_time', 'status'), ['status'])).toBe(false);
    expect(indexServes(index('status'), ['status', 'biz_type'], true)).toBe(false);
  });
});

describe('the read replica', () => {
  const lag = (lagSeconds: number | null, running = true, isReplica = true) => ({
    lagSeconds,
    running,
    isReplica,
    reason: lagSeconds === null ? 'replication is stopped (IO thread: No, SQL thread: No)' : null,
  });

  it('says how old the figures may be, or that nobody knows', () => {
    expect(replicaNote('r', lag(0))).toMatch(/no replication lag/);
    expect(replicaNote('r', lag(42))).toMatch(/42s behind the primary: they are up to 42s old/);
    expect(replicaNote('r', lag(null, false))).toMatch(/lag is unknown: replication is stopped/);
  });

  it('passes doctor within a minute of lag, warns beyond it, fails when stopped or not a replica', () => {
    expect(replicaCheck('r', lag(60)).status).toBe('ok');
    expect(replicaCheck('r', lag(61)).status).toBe('warn');
    expect(replicaCheck('r', lag(null, false)).status).toBe('fail');
    expect(replicaCheck('r', { ...lag(null, false, false), reason: 'not a replica' }).status).toBe('fail');
  });
});

describe('indexServes with the covering summary index', () => {
  it('takes status and biz type in either order, then the times in order', () => {
    const wanted = ['status', 'biz_type', 'next_retry_time', 'updated_at'];
    expect(indexServes(index(...wanted), wanted, true)).toBe(true);
    expect(indexServes(index('biz_type', 'status', 'next_retry_time', 'updated_at'), wanted, true)).toBe(
      true,
    );
    expect(indexServes(index('status', 'biz_type'), wanted, true)).toBe(false);
    expect(indexServes(index('status', 'biz_type', 'updated_at', 'next_retry_time'), wanted, true)).toBe(
      false,
    );
  });
});
