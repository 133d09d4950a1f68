import { describe, expect, it } from 'vitest';
import { fingerprint, jobIdentity } from '../../src/core/sweep-identity.js';

describe('job identity across retries', () => {
  it("is Laravel's payload uuid", () => {
    const payload = JSON.stringify({
      uuid: '7d6c1f1e-3b8e-4c3f-9f8e-1a2b3c4d5e6f',
      displayName: 'App\\Jobs\\SendSms',
      attempts: 3,
    });
    expect(jobIdentity({ kind: 'laravel', payload, rowId: '9' })).toBe(
      '7d6c1f1e-3b8e-4c3f-9f8e-1a2b3c4d5e6f',
    );
  });

  it("is think-queue's payload id where present", () => {
    const payload = JSON.stringify({
      job: 'app\\job\\SendPaidSmsJob',
      id: 'r4nd0m1d',
      data: { order: 1 },
      attempts: 2,
    });
    expect(jobIdentity({ kind: 'thinkphp', payload, rowId: '1' })).toBe('r4nd0m1d');
  });

  it('is a fingerprint of job and data otherwise, the same whatever the attempts and row', () => {
    const a = JSON.stringify({
      job: 'app\\job\\CreatePickTaskJob',
      maxTries: 3,
      timeout: 60,
      data: { order: 42 },
      attempts: 3,
    });
    const b = JSON.stringify({
      job: 'app\\job\\CreatePickTaskJob',
      maxTries: 3,
      timeout: 60,
      data: { order: 42 },
      attempts: 1,
    });
    const other = JSON.stringify({ job: 'app\\job\\CreatePickTaskJob', data: { order: 43 }, attempts: 3 });
    const id = jobIdentity({ kind: 'thinkphp', payload: a, rowId: '1' });
    expect(id).toMatch(/^fp:[0-9a-f]{40}$/);
    expect(jobIdentity({ kind: 'thinkphp', payload: b, rowId: '2' })).toBe(id);
    expect(jobIdentity({ kind: 'thinkphp', payload: other, rowId: '3' })).not.toBe(id);
    expect(id).toBe(fingerprint('app\\job\\CreatePickTaskJob', { order: 42 }));
  });

  it('is the event id of a task row, else its id', () => {
    expect(jobIdentity({ kind: 'task', eventId: 'pay-1001-sms', rowId: '5' })).toBe('pay-1001-sms');
    expect(jobIdentity({ kind: 'task', eventId: null, rowId: '5' })).toBe('row:5');
  });

  it('fits the audit event_id column', () => {
    const long = 'x'.repeat(100);
    expect(
      jobIdentity({ kind: 'thinkphp', payload: JSON.stringify({ job: 'J', id: long }), rowId: '1' }).length,
    ).toBeLessThanOrEqual(64);
    expect(jobIdentity({ kind: 'task', eventId: long, rowId: '1' }).length).toBeLessThanOrEqual(64);
  });
});
