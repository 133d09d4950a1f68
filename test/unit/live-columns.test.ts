import { describe, expect, it } from 'vitest';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { hasNumericId, hasTextId, idColumnOf } from '../../src/db/live-columns.js';
import type { ColumnInfo } from '../../src/db/types.js';

/** async_task's columns with its id column of `dataType`. */
function withId(dataType: string, name = 'id') {
  const columns: ColumnInfo[] = [
    { name, dataType, columnType: dataType, maxLength: null, nullable: false },
    { name: 'status', dataType: 'tinyint', columnType: 'tinyint', maxLength: null, nullable: false },
  ];
  return { profile: asyncTask, columns };
}

describe('the id column of a live table', () => {
  it('is found whatever the case of its name', () => {
    expect(idColumnOf(withId('bigint', 'ID'))?.name).toBe('ID');
    expect(idColumnOf(withId('bigint', 'task_id'))).toBeUndefined();
  });

  it('holds text for the text types only: its ids stay text, digits or not', () => {
    for (const type of ['varchar', 'char', 'text', 'longtext', 'uuid'])
      expect(hasTextId(withId(type)), type).toBe(true);
    // Numbers, and types a SQLite table may declare that say nothing (any name, or none).
    for (const type of ['bigint', 'int', 'integer', 'decimal', 'numeric', '', 'unsigned big int', 'int8'])
      expect(hasTextId(withId(type)), type).toBe(false);
    expect(hasTextId(withId('varchar', 'task_id'))).toBe(false);
  });

  it('holds whole numbers for the integer types only', () => {
    for (const type of ['tinyint', 'smallint', 'int', 'integer', 'bigint'])
      expect(hasNumericId(withId(type)), type).toBe(true);
    for (const type of ['varchar', 'decimal', 'uuid']) expect(hasNumericId(withId(type)), type).toBe(false);
  });
});
