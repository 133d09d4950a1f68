import { describe, expect, it } from 'vitest';
import { containsText } from '../../src/db/fragment.js';

describe('console text search', () => {
  it('matches the typed text literally anywhere: % _ and the escape character are not wildcards', () => {
    expect(containsText('`last_error`', '50%_off!', 'LIKE')).toEqual({
      sql: "`last_error` LIKE ? ESCAPE '!'",
      params: ['%50!%!_off!!%'],
    });
  });

  it("uses the dialect's operator: ILIKE on PostgreSQL", () => {
    expect(containsText('"last_error"', 'Timeout', 'ILIKE')).toEqual({
      sql: `"last_error" ILIKE ? ESCAPE '!'`,
      params: ['%Timeout%'],
    });
  });

  it('adds nothing for an empty search or a column the profile lacks', () => {
    expect(containsText('`last_error`', '', 'LIKE')).toEqual({ sql: '1=1', params: [] });
    expect(containsText(undefined, 'timeout', 'LIKE')).toEqual({ sql: '1=1', params: [] });
  });
});
