import { describe, expect, it } from 'vitest';
import { fenceWhere, lastErrorLimit, transitionStatement } from '../../src/db/sql/transitions.js';
import type { BoundSource } from '../../src/db/bind-source.js';
import { TaskSql } from '../../src/db/task-sql.js';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { asyncTask, jobRetries, laravelFailedJobs } from '../../src/db/profiles/builtin.js';
import type { Profile } from '../../src/db/profiles/types.js';
import type { ColumnInfo } from '../../src/db/types.js';

function source(
  profile: Profile,
  lastError: Partial<ColumnInfo> = { dataType: 'varchar', maxLength: 512 },
): BoundSource {
  const columns: ColumnInfo[] = [
    {
      name: 'last_error',
      dataType: 'varchar',
      columnType: '',
      maxLength: null,
      nullable: true,
      ...lastError,
    },
  ];
  return {
    name: 't',
    profile,
    db: undefined as never,
    sql: new TaskSql(mysqlDialect, profile, {
      nextRetryAt: 'datetime',
      updatedAt: 'datetime',
      createdAt: 'datetime',
    }),
    columns,
    problems: [],
  };
}

const fence = { leaseUntilEpoch: 1_800_000_000, attempts: 2 };

describe('guarded transition statements', () => {
  it('a retry names the state it expects and the claim it holds, and sets updated_at', () => {
    const s = transitionStatement(source(asyncTask), {
      transition: 'retry',
      id: 7,
      fence,
      attempts: 3,
      nextRetryAt: 1_800_000_016,
      lastError: 'HTTP 503',
    });
    expect(s.sql).toBe(
      'UPDATE `async_task` SET `status` = ?, `retry_count` = ?, `next_retry_time` = FROM_UNIXTIME(?), `last_error` = ?, `updated_at` = NOW() ' +
        'WHERE (`id` = ?) AND (`status` = ?) AND ((`next_retry_time` = FROM_UNIXTIME(?)) AND (`retry_count` = ?))',
    );
    expect(s.params).toEqual([0, 3, 1_800_000_016, 'HTTP 503', 7, 1, 1_800_000_000, 2]);
  });

  it('success on many ids of one claim is one statement', () => {
    const s = transitionStatement(source(asyncTask), { transition: 'succeed', id: [1, 2, 3], fence });
    expect(s.sql).toContain('WHERE (`id` IN (?, ?, ?)) AND (`status` = ?)');
    expect(s.params.slice(0, 4)).toEqual([2, 1, 2, 3]);
  });

  it('a manual retry moves failed to pending, due now, without a fence', () => {
    const s = transitionStatement(source(asyncTask), {
      transition: 'manual-retry',
      id: 9,
      nextRetryAt: 'now',
      attempts: 0,
    });
    expect(s.sql).toBe(
      'UPDATE `async_task` SET `status` = ?, `retry_count` = ?, `next_retry_time` = NOW(), `updated_at` = NOW() WHERE (`id` = ?) AND (`status` = ?)',
    );
    expect(s.params).toEqual([0, 0, 9, 3]);
  });

  it('success on a table without a success status (job_retries) deletes the row under the same guard', () => {
    const s = transitionStatement(source(jobRetries), { transition: 'succeed', id: 5, fence });
    expect(s.sql).toBe(
      'DELETE FROM `job_retries` WHERE (`id` = ?) AND (`status` = ?) AND ((`next_retry_at` = FROM_UNIXTIME(?)) AND (`attempts` = ?))',
    );
    expect(s.params).toEqual([5, 'retrying', 1_800_000_000, 2]);
  });

  it('refuses to write a status a profile cannot hold, saying what to map', () => {
    expect(() => transitionStatement(source(jobRetries), { transition: 'mark-compensated', id: 1 })).toThrow(
      /no 'compensated' status/,
    );
    expect(() => transitionStatement(source(laravelFailedJobs), { transition: 'fail', id: 1 })).toThrow(
      /no status column/,
    );
  });

  it('truncates last_error to the live column, in characters', () => {
    const s = transitionStatement(source(asyncTask, { maxLength: 10 }), {
      transition: 'fail',
      id: 1,
      fence,
      lastError: 'connection refused by peer',
    });
    expect(s.params).toContain('connectio…');
    expect(lastErrorLimit(source(asyncTask, { maxLength: 64 }))).toBe(64);
    expect(lastErrorLimit(source(asyncTask, { dataType: 'text', maxLength: 65_535 }))).toBe(4000);
  });

  it('the fence compares the lease expiry and attempts (attempts left out when unknown)', () => {
    const sql = source(asyncTask).sql;
    expect(fenceWhere(sql, fence).sql).toBe('(`next_retry_time` = FROM_UNIXTIME(?)) AND (`retry_count` = ?)');
    expect(fenceWhere(sql, { leaseUntilEpoch: 1, attempts: null }).sql).toBe(
      '(`next_retry_time` = FROM_UNIXTIME(?))',
    );
  });
});
