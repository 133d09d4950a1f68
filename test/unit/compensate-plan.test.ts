import { describe, expect, it } from 'vitest';
import { actionUnsupported, decide, selectableStatuses } from '../../src/core/compensate-plan.js';
import { pacing, parseRate } from '../../src/core/pacer.js';

describe('compensate rules', () => {
  it('moves only the states each action takes, says "already" at the target, refuses the rest with the reason', () => {
    expect(decide('retry', 'failed')).toEqual({ kind: 'apply', from: 'failed', to: 'pending' });
    expect(decide('mark-compensated', 'compensated')).toMatchObject({ kind: 'already' });
    expect(decide('mark-compensated', 'success')).toEqual({
      kind: 'refused',
      from: 'success',
      reason: 'mark-compensated moves a task from failed to compensated; this task is success',
    });
    expect(decide('mark-failed', 'processing')).toMatchObject({ kind: 'apply', to: 'failed' });
    expect(decide('mark-failed', 'success')).toMatchObject({ kind: 'refused' });
    expect(decide('forget', 'failed')).toEqual({ kind: 'apply', from: 'failed', to: 'deleted' });
    expect(decide('forget', 'pending')).toMatchObject({
      kind: 'refused',
      reason: 'forget deletes failed rows only; this task is pending',
    });
  });

  it('knows which tables cannot take an action at all', () => {
    const failedJobs = {
      profile: 'laravel-failed-jobs',
      kind: 'failed-jobs' as const,
      statuses: ['failed' as const],
    };
    expect(actionUnsupported('retry', failedJobs)).toBeUndefined();
    expect(actionUnsupported('forget', failedJobs)).toBeUndefined();
    expect(actionUnsupported('mark-compensated', failedJobs)).toMatch(/no status column/);
    const jobRetries = {
      profile: 'job-retries',
      kind: 'task' as const,
      statuses: ['pending' as const, 'processing' as const, 'failed' as const],
    };
    expect(actionUnsupported('mark-compensated', jobRetries)).toMatch(/no 'compensated' status/);
    expect(actionUnsupported('retry', jobRetries)).toBeUndefined();
    // A job system takes the actions its writer has: pg-boss retry and forget, River also a cancel.
    const statuses = ['pending' as const, 'processing' as const, 'failed' as const, 'compensated' as const];
    const pgBoss = { profile: 'pg-boss', kind: 'job-system' as const, statuses };
    expect(actionUnsupported('mark-compensated', pgBoss)).toMatch(/use --action retry or --action forget$/);
    const river = { ...pgBoss, profile: 'river', systemActions: ['retry', 'forget', 'mark-compensated'] };
    expect(actionUnsupported('mark-compensated', river)).toBeUndefined();
    expect(actionUnsupported('mark-failed', river)).toMatch(
      /river .* no mark-failed for a failed job: use --action retry or --action forget or --action mark-compensated$/,
    );
    const laravelJobs = {
      profile: 'laravel-jobs',
      kind: 'queue-jobs' as const,
      statuses: ['pending' as const, 'processing' as const],
    };
    expect(actionUnsupported('mark-failed', laravelJobs)).toMatch(/no 'failed' status/);
    expect(actionUnsupported('retry', laravelJobs)).toMatch(/never failed/);
  });

  it('narrows a filtered selection to the statuses the action moves', () => {
    expect(selectableStatuses('mark-failed', undefined)).toEqual(['pending', 'processing']);
    expect(selectableStatuses('mark-failed', ['processing', 'failed'])).toEqual(['processing']);
    expect(selectableStatuses('retry', ['success'])).toEqual([]);
  });

  it('reads --rate and paces batches to it', () => {
    expect(parseRate('200/s')).toBe(200);
    expect(parseRate('50')).toBe(50);
    expect(parseRate('6000/m')).toBe(100);
    expect(parseRate('0')).toBeUndefined();
    expect(parseRate('fast')).toBeUndefined();
    expect(pacing(undefined, 200)).toEqual({ batch: 200, minBatchMs: 0 });
    expect(pacing(100, 200)).toEqual({ batch: 20, minBatchMs: 200 });
    expect(pacing(2, 200)).toEqual({ batch: 1, minBatchMs: 500 });
  });
});
