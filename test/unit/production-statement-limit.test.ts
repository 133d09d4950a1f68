import { describe, expect, it } from 'vitest';
import { flavourOf, isStatementTimeout, limitStatement } from '../../src/db/engines/mysql/statement-limit.js';
import { indexHintFor, statementLabel, statementTimeoutError } from '../../src/db/statement-limit.js';

describe('limitStatement', () => {
  it('prefixes a MariaDB read with SET STATEMENT max_statement_time in seconds', () => {
    expect(limitStatement('  SELECT 1', 'mariadb', 1500)).toBe(
      'SET STATEMENT max_statement_time=1.500 FOR SELECT 1',
    );
  });

  it('puts the MAX_EXECUTION_TIME hint right after SELECT on MySQL, in milliseconds', () => {
    expect(limitStatement('SELECT a FROM t', 'mysql', 30_000)).toBe(
      'SELECT /*+ MAX_EXECUTION_TIME(30000) */ a FROM t',
    );
  });

  it('leaves writes, SHOW and EXPLAIN alone, and every statement when the limit is 0', () => {
    expect(limitStatement('UPDATE t SET a = 1', 'mariadb', 1000)).toBe('UPDATE t SET a = 1');
    expect(limitStatement('SHOW SLAVE STATUS', 'mariadb', 1000)).toBe('SHOW SLAVE STATUS');
    expect(limitStatement('EXPLAIN SELECT 1', 'mysql', 1000)).toBe('EXPLAIN SELECT 1');
    expect(limitStatement('SELECT 1', 'mariadb', 0)).toBe('SELECT 1');
  });

  it('tells MariaDB from MySQL by VERSION()', () => {
    expect(flavourOf('10.11.19-MariaDB-0+deb12u1')).toBe('mariadb');
    expect(flavourOf('8.0.36')).toBe('mysql');
  });
});

describe('a fired time limit', () => {
  it('is recognised by MariaDB 1969 and MySQL 3024, and nothing else', () => {
    expect(isStatementTimeout({ errno: 1969 })).toBe(true);
    expect(isStatementTimeout({ errno: 3024 })).toBe(true);
    expect(isStatementTimeout({ errno: 1205 })).toBe(false);
    expect(isStatementTimeout(undefined)).toBe(false);
  });

  it('is labelled by the first frame in the SQL modules', () => {
    const stack = [
      'Error',
      '    at MysqlQueryable.query (file:///opt/taskrecon/dist/db/engines/mysql/db.js:210:20)',
      '    at countDue (file:///opt/taskrecon/dist/db/sql/scan.js:50:10)',
      '    at async scanSummary (file:///opt/taskrecon/dist/verbs/scan/scan.js:117:5)',
    ].join('\n');
    expect(statementLabel({ stack })).toBe('scan.countDue');
  });

  it('falls back to the first frame outside the connection code', () => {
    const stack = [
      'Error',
      '    at MysqlQueryable.query (/opt/taskrecon/dist/db/engines/mysql/db.js:210:20)',
      '    at async bindSource (/opt/taskrecon/dist/db/bind-source.js:40:3)',
    ].join('\n');
    expect(statementLabel({ stack })).toBe('bind-source.bindSource');
  });

  it('becomes exit 3 naming the statement and the index that helps', () => {
    const error = statementTimeoutError(new Error('x'), 'scan.countDue', 1000);
    expect(error.exit).toBe(3);
    expect(error.code).toBe('STATEMENT_TIMEOUT');
    expect(error.message).toContain('scan.countDue');
    expect(error.hint).toContain('(status, biz_type, next_retry_time, updated_at)');
    expect(indexHintFor('report.windowAggregate')).toContain('created_at');
  });
});
