import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSimpleJsonPath, valueAtPath } from '../../src/core/json-path.js';
import type { Task } from '../../src/core/task.js';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { sqliteDialect } from '../../src/db/engines/sqlite/dialect.js';
import { errorLike } from '../../src/db/fragment.js';
import { profileFor } from '../../src/db/profiles/registry.js';
import { TaskreconError } from '../../src/errors.js';
import { displayWidth } from '../../src/render/fit.js';
import { renderTaskList } from '../../src/render/scan.js';

const failedJob = (id: number, queue: string, connection: string): Task => ({
  id,
  bizType: 'app\\job\\SendSmsNotificationToCustomerAfterOrderPaid',
  bizId: `SN10${id}`,
  eventId: null,
  status: 'failed',
  attempts: 3,
  nextRetryAt: null,
  lastError: 'think\\exception\\ErrorException: gateway timeout after 3000 ms talking to sms-gateway',
  createdAt: null,
  updatedAt: '2026-12-03T10:00:00Z',
  queue,
  connection,
});

describe('the failed list on a terminal', () => {
  const tty = { isTTY: process.stdout.isTTY, columns: process.stdout.columns };
  beforeEach(() => {
    Object.assign(process.stdout, { isTTY: true, columns: 80 });
  });
  afterEach(() => {
    Object.assign(process.stdout, tty);
  });

  it('shows queue and connection columns for failed jobs and still fits an 80- or 70-column terminal', () => {
    const tasks = [
      failedJob(1, 'notifications-high-priority', 'redis-cluster-main'),
      failedJob(2, 'sms', 'database'),
    ];
    const lines = renderTaskList('Failed', tasks).split('\n');
    expect(lines[1]).toMatch(/\bbiz type\b.*\bqueue\b/);
    expect(lines[1]).not.toContain('next retry');
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(80);
    // The class name gives way from its start; the queue is never cut; what was left out is named.
    expect(lines[4]).toMatch(/…\w*AfterOrderPaid\s+SN101\s+notifications-high-priority\b/);
    expect(lines[5]).toMatch(/\bsms\b/);
    expect(lines.slice(-2).join(' ')).toMatch(/left out to fit 80 columns: .*connection/);
    process.stdout.columns = 160;
    expect(renderTaskList('Failed', tasks).split('\n')[1]).toMatch(/\bqueue\b.*\bconnection\b/);
    process.stdout.columns = 70;
    for (const line of renderTaskList('Failed', tasks).split('\n'))
      expect(displayWidth(line), line).toBeLessThanOrEqual(70);
  });

  it('has no queue or connection column for tasks that have neither', () => {
    const task = { ...failedJob(1, 'x', 'y'), queue: null, connection: null };
    expect(renderTaskList('Failed', [task]).split('\n')[1]).not.toMatch(/queue|connection/);
  });
});

describe('bizId and eventId from a JSON path', () => {
  const source = (path: string, field = 'bizId') => ({
    profile: 'thinkphp-failed-jobs',
    columns: { [field]: { json: 'payload', path } },
  });

  it('accepts keys and array indexes, and reads them from a parsed payload', () => {
    expect(profileFor(source('$.data.order_sn'), 'sources.tp').fields.bizId).toEqual({
      json: 'payload',
      path: '$.data.order_sn',
    });
    expect(isSimpleJsonPath('$.items[0].sku')).toBe(true);
    expect(valueAtPath({ data: { order_sn: 'SN1001' } }, '$.data.order_sn')).toBe('SN1001');
    expect(valueAtPath({ items: [{ sku: 'A' }] }, '$.items[0].sku')).toBe('A');
    expect(valueAtPath({ data: 'text' }, '$.data.order_sn')).toBeUndefined();
  });

  it.each(['data.order_sn', '$', '$.data."order sn"', "$.a'); DROP TABLE x; --", '$.a[*]', '$..a'])(
    'refuses the path %j with exit 3, naming the field and how to write it',
    (path) => {
      const error = (() => {
        try {
          profileFor(source(path), 'sources.tp');
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(TaskreconError);
      expect((error as TaskreconError).exit).toBe(3);
      expect((error as TaskreconError).message).toContain('sources.tp.columns.bizId.path');
      expect((error as TaskreconError).hint).toContain("'$.data.order_sn'");
    },
  );

  it('refuses a JSON path for a field other than bizId and eventId', () => {
    expect(() => profileFor(source('$.attempts', 'attempts'), 'sources.tp')).toThrow(
      /only bizId and eventId can be read from a JSON path/,
    );
  });

  it('reads a JSON null as SQL NULL on MariaDB/MySQL (JSON_UNQUOTE would give the text null)', () => {
    const sql = mysqlDialect.jsonText('`payload`', '$.data.order_sn');
    expect(sql).toContain(`JSON_TYPE(JSON_EXTRACT(\`payload\`, '$.data.order_sn')) <> 'NULL'`);
    expect(sqliteDialect.jsonText('"payload"', '$.items[0]')).toContain(
      `json_extract("payload", '$.items[0]')`,
    );
  });
});

describe('--error-like', () => {
  it('matches text without % literally: _ and ! are escaped', () => {
    expect(errorLike('`exception`', 'order_sn!', 'LIKE')).toEqual({
      sql: "`exception` LIKE ? ESCAPE '!'",
      params: ['%order!_sn!!%'],
    });
  });

  it('takes text with a % as the LIKE pattern it is', () => {
    expect(errorLike('`exception`', 'Timeout%order_%', 'LIKE')).toEqual({
      sql: '`exception` LIKE ?',
      params: ['Timeout%order_%'],
    });
  });
});
