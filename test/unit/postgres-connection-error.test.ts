import { describe, expect, it } from 'vitest';
import { connectionError } from '../../src/db/engines/postgres/db.js';

describe('PostgreSQL connection errors', () => {
  it('a refused password names the fix and never shows the password', () => {
    const error = connectionError(
      Object.assign(
        new Error('password authentication failed for user "app" (postgres://app:hunter2@db/x)'),
        {
          code: '28P01',
        },
      ),
      'postgres://app:***@db:5432/x',
    );
    expect(error.message).toMatch(
      /^cannot connect to postgres:\/\/app:\*\*\*@db:5432\/x: password authentication failed/,
    );
    expect(error.message).not.toContain('hunter2');
    expect(error.hint).toMatch(/user and password/);
  });
});
