import { describe, expect, it } from 'vitest';
import { mysqlIndexOnly } from '../../src/db/engines/mysql/server.js';
import { postgresIndexOnly } from '../../src/db/engines/postgres/plans.js';
import { sqliteIndexOnly } from '../../src/db/engines/sqlite/server.js';

/** Whether a plan reads an index alone: what decides if a whole list is read one page ahead. */
describe('index-only plans', () => {
  it('MySQL/MariaDB: Extra says Using index; index condition pushdown or a table read is not', () => {
    expect(
      mysqlIndexOnly([{ type: 'range', key: 'idx_status_next_retry', Extra: 'Using where; Using index' }]),
    ).toBe(true);
    expect(
      mysqlIndexOnly([{ type: 'ref', key: 'idx_status_next_retry', Extra: 'Using index condition' }]),
    ).toBe(false);
    expect(mysqlIndexOnly([{ type: 'ALL', key: null, Extra: 'Using where; Using filesort' }])).toBe(false);
    expect(mysqlIndexOnly([])).toBe(false);
    // A page bound read through a sort would sort the whole rest of the list for each page.
    expect(
      mysqlIndexOnly([
        { type: 'ref', key: 'idx_status_next_retry', Extra: 'Using where; Using index; Using filesort' },
      ]),
    ).toBe(false);
  });

  it('PostgreSQL: every scan an Index Only Scan', () => {
    const plan = (...scans: string[]) => [
      {
        'QUERY PLAN': JSON.stringify([
          { Plan: { 'Node Type': 'Limit', Plans: scans.map((t) => ({ 'Node Type': t })) } },
        ]),
      },
    ];
    expect(postgresIndexOnly(plan('Index Only Scan'))).toBe(true);
    expect(postgresIndexOnly(plan('Index Scan'))).toBe(false);
    expect(postgresIndexOnly(plan('Index Only Scan', 'Seq Scan'))).toBe(false);
    expect(postgresIndexOnly(plan())).toBe(false);
    const sorted = [
      {
        'QUERY PLAN': JSON.stringify([
          {
            Plan: {
              'Node Type': 'Limit',
              Plans: [{ 'Node Type': 'Sort', Plans: [{ 'Node Type': 'Index Only Scan' }] }],
            },
          },
        ]),
      },
    ];
    expect(postgresIndexOnly(sorted)).toBe(false);
  });

  it('SQLite: every SCAN or SEARCH through a covering index', () => {
    expect(
      sqliteIndexOnly([{ detail: 'SEARCH async_task USING COVERING INDEX idx_status (status=?)' }]),
    ).toBe(true);
    expect(sqliteIndexOnly([{ detail: 'SEARCH async_task USING INDEX idx_status (status=?)' }])).toBe(false);
    expect(sqliteIndexOnly([{ detail: 'SCAN async_task' }])).toBe(false);
    expect(sqliteIndexOnly([])).toBe(false);
    expect(
      sqliteIndexOnly([
        { detail: 'SEARCH async_task USING COVERING INDEX idx_status (status=?)' },
        { detail: 'USE TEMP B-TREE FOR ORDER BY' },
      ]),
    ).toBe(false);
  });
});
