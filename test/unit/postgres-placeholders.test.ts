import { describe, expect, it } from 'vitest';
import { postgresDialect } from '../../src/db/engines/postgres/dialect.js';
import { foldedAliases, numberPlaceholders } from '../../src/db/engines/postgres/placeholders.js';

describe("PostgreSQL's numbered placeholders", () => {
  it('numbers each ? in order', () => {
    expect(numberPlaceholders('SELECT * FROM t WHERE a = ? AND b IN (?, ?)')).toBe(
      'SELECT * FROM t WHERE a = $1 AND b IN ($2, $3)',
    );
  });

  it('leaves a statement without placeholders as it is', () => {
    const sql = 'SELECT 1';
    expect(numberPlaceholders(sql)).toBe(sql);
  });

  it('skips ? inside quoted literals, identifiers, dollar quotes and comments', () => {
    expect(numberPlaceholders(`SELECT '?', 'it''s ?', "col?" FROM t WHERE x = ?`)).toBe(
      `SELECT '?', 'it''s ?', "col?" FROM t WHERE x = $1`,
    );
    expect(numberPlaceholders(`SELECT E'a\\'?' , ? -- why?\n, ? /* or? */ , $$?$$, $q$?$q$, ?`)).toBe(
      `SELECT E'a\\'?' , $1 -- why?\n, $2 /* or? */ , $$?$$, $q$?$q$, $3`,
    );
  });

  it("leaves the dialect's own SQL intact (regex literals, JSON paths, casts)", () => {
    const sql = `SELECT ${postgresDialect.jsonText('"payload"', '$.a.b')} FROM t WHERE "next_retry_time" <= ${postgresDialect.epochParam('timestamp')}`;
    expect(numberPlaceholders(sql)).toBe(sql.replace('to_timestamp(?)', 'to_timestamp($1)'));
  });

  it('quotes a schema-qualified table as schema and name', () => {
    expect(postgresDialect.quoteId('pgboss.job')).toBe('"pgboss"."job"');
    expect(postgresDialect.quoteId('async_task')).toBe('"async_task"');
    expect(postgresDialect.quoteId('we"ird')).toBe('"we""ird"');
  });
});

describe("PostgreSQL's folded aliases", () => {
  it('names each unquoted alias with capitals by the lower-case name the server gives it', () => {
    const aliases = foldedAliases(
      `SELECT "biz_type" AS bizType, COUNT(*) AS n, 'AS notThis' AS "quotedAlias", x as rawStatus FROM t`,
    );
    expect(aliases && Object.fromEntries(aliases)).toEqual({ biztype: 'bizType', rawstatus: 'rawStatus' });
    expect(foldedAliases('SELECT a AS n FROM t')).toBeNull();
  });
});
