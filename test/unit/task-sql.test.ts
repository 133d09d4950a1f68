import { describe, expect, it } from 'vitest';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { sqliteDialect } from '../../src/db/engines/sqlite/dialect.js';
import { asyncTask, laravelFailedJobs, laravelJobs } from '../../src/db/profiles/builtin.js';
import { TaskSql, toIso } from '../../src/db/task-sql.js';

describe('TaskSql', () => {
  it('binds status values instead of inlining them', () => {
    const sql = new TaskSql(mysqlDialect, asyncTask, { nextRetryAt: 'datetime' });
    expect(sql.statusIn(['pending'])).toEqual({ sql: '`status` = ?', params: [0] });
    expect(sql.statusIn(['pending', 'processing'])).toEqual({ sql: '`status` IN (?, ?)', params: [0, 1] });
    expect(sql.logicalStatus('3')).toBe('failed');
    expect(sql.logicalStatus(9)).toBe('unknown');
  });

  it('keeps the column bare when comparing with a cutoff, so the index is usable', () => {
    const sql = new TaskSql(mysqlDialect, asyncTask, { nextRetryAt: 'datetime' });
    expect(sql.timeCompare('nextRetryAt', '<=', 1000)).toEqual({
      sql: '`next_retry_time` <= FROM_UNIXTIME(?)',
      params: [1000],
    });
    const unix = new TaskSql(mysqlDialect, laravelJobs, laravelJobs.timeTypes);
    expect(unix.timeCompare('nextRetryAt', '<=', 1000)).toEqual({
      sql: '`available_at` <= ?',
      params: [1000],
    });
  });

  it('models Laravel jobs by reservation and failed jobs as all failed', () => {
    const jobs = new TaskSql(sqliteDialect, laravelJobs, laravelJobs.timeTypes);
    expect(jobs.statusIn(['pending']).sql).toBe('"reserved_at" IS NULL');
    expect(jobs.statusIn(['processing']).sql).toBe('"reserved_at" IS NOT NULL');
    const failed = new TaskSql(sqliteDialect, laravelFailedJobs, {});
    expect(failed.statusIn(['failed']).sql).toBe('1=1');
    expect(failed.statusIn(['pending']).sql).toBe('1=0');
  });

  it('quotes identifiers against injection', () => {
    expect(mysqlDialect.quoteId('a`b')).toBe('`a``b`');
    expect(sqliteDialect.quoteId('a"b')).toBe('"a""b"');
  });

  it('turns epoch seconds into ISO-8601 UTC and garbage into null', () => {
    expect(toIso(0)).toBe('1970-01-01T00:00:00Z');
    expect(toIso('1764403200')).toBe('2025-11-29T08:00:00Z');
    expect(toIso(null)).toBeNull();
    expect(toIso('x')).toBeNull();
  });
});
