import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { flavourOf, isStatementTimeout, limitStatement } from '../../src/db/engines/mysql/statement-limit.js';
import {
  mysqlSkipLockedVerdict,
  mysqlVersionVerdict,
  parseServerVersion,
} from '../../src/db/engines/mysql/version.js';

// TiDB and Vitess speak the MySQL protocol and answer VERSION() with the MySQL version they
// emulate; no such server runs here, so these are the version strings they document.
const TIDB = '8.0.11-TiDB-v7.5.1';
const TIDB_OLD = '5.7.25-TiDB-v6.5.0';
const VITESS = '8.0.30-Vitess';

describe('the server flavour from VERSION()', () => {
  it('tells TiDB and Vitess from MySQL and MariaDB', () => {
    expect(flavourOf(TIDB)).toBe('tidb');
    expect(flavourOf(TIDB_OLD)).toBe('tidb');
    expect(flavourOf(VITESS)).toBe('vitess');
    expect(flavourOf('8.0.36')).toBe('mysql');
    expect(flavourOf('8.0.36-28')).toBe('mysql');
    expect(flavourOf('10.11.19-MariaDB-0+deb12u1')).toBe('mariadb');
    expect(parseServerVersion(TIDB)).toMatchObject({ product: 'TiDB', major: 8, minor: 0, patch: 11 });
    expect(parseServerVersion(VITESS)?.product).toBe('Vitess');
  });

  it('limits a TiDB read with the MAX_EXECUTION_TIME hint, a Vitess read with the vtgate directive', () => {
    expect(limitStatement('SELECT a FROM t', 'tidb', 2500)).toBe(
      'SELECT /*+ MAX_EXECUTION_TIME(2500) */ a FROM t',
    );
    expect(limitStatement('  select a FROM t', 'vitess', 2500)).toBe(
      '  select /*vt+ QUERY_TIMEOUT_MS=2500 */ a FROM t',
    );
    expect(limitStatement('UPDATE t SET a = 1', 'tidb', 2500)).toBe('UPDATE t SET a = 1');
    expect(limitStatement('SELECT 1', 'vitess', 0)).toBe('SELECT 1');
  });

  it("recognises TiDB's fired limit (3024) and vtgate's deadline, not a person's KILL QUERY", () => {
    expect(isStatementTimeout({ errno: 3024, code: 'ER_QUERY_TIMEOUT' })).toBe(true);
    expect(isStatementTimeout({ errno: 1317, message: 'vtgate: context deadline exceeded' })).toBe(true);
    expect(isStatementTimeout({ errno: 1317, message: 'Query execution was interrupted' })).toBe(false);
  });

  it("doctor's SKIP LOCKED check says TiDB does not skip, and that claims do not need it", () => {
    const verdict = mysqlSkipLockedVerdict(TIDB);
    expect(verdict?.status).toBe('ok');
    expect(verdict?.message).toContain('without skipping locked rows');
    expect(mysqlSkipLockedVerdict('8.0.36')).toBeNull();
    expect(mysqlVersionVerdict(TIDB)).toMatchObject({ status: 'ok', message: `TiDB ${TIDB}` });
  });
});

/** The source without its comments (a comment may name what the code must not do). */
function code(text: string): string {
  return text
    .split('\n')
    .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
    .join('\n');
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('no UPDATE … LIMIT or DELETE … LIMIT', () => {
  // Vitess ≥ 22 applies one global LIMIT to a scatter UPDATE … LIMIT (vitessio/vitess#19790): a
  // page is chosen by a SELECT and written by its id list, never bounded by the write itself.
  const root = fileURLToPath(new URL('../../src/', import.meta.url));
  const writes = sources(root).flatMap((path) =>
    [...code(readFileSync(path, 'utf8')).matchAll(/`\s*(UPDATE|DELETE)\b[^`]*`/gi)].map((m) => ({
      path,
      sql: m[0],
    })),
  );

  it('finds the writes it looks at', () => {
    expect(writes.length).toBeGreaterThan(10);
    expect(writes.some((w) => w.path.endsWith('claims.ts'))).toBe(true);
  });

  it('none of them bounds itself with LIMIT', () => {
    const bounded = writes.filter((w) => /\bLIMIT\b/i.test(w.sql)).map((w) => `${w.path}: ${w.sql}`);
    expect(bounded).toEqual([]);
  });
});
