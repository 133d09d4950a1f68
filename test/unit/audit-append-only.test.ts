import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** A statement that changes or removes rows of the audit table, named literally or by AUDIT_TABLE. */
const CHANGES_AUDIT_ROWS =
  /\b(UPDATE|DELETE\s+FROM|TRUNCATE(\s+TABLE)?|REPLACE\s+INTO|DROP\s+TABLE)\s+[`"]?(\$\{[^}]*AUDIT_TABLE[^}]*\}|taskrecon_audit\b)/i;

/**
 * The statements a source file writes: every string and template literal, as the TypeScript
 * parser reads it (a template keeps its `${…}` expressions as written), so comments never count
 * and a statement split over lines is one string.
 */
function statementsIn(name: string, text: string): string[] {
  const file = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) found.push(node.text);
    else if (ts.isTemplateExpression(node)) found.push(node.getText(file).slice(1, -1));
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function auditChangesIn(name: string, text: string): string[] {
  return statementsIn(name, text)
    .filter((statement) => CHANGES_AUDIT_ROWS.test(statement))
    .map((statement) => `${name}: ${statement.replace(/\s+/g, ' ').slice(0, 100)}`);
}

describe('the audit log is append-only', () => {
  it('no statement in the code updates, deletes or truncates audit rows', () => {
    const offending = sources(SRC).flatMap((path) =>
      auditChangesIn(relative(SRC, path), readFileSync(path, 'utf8')),
    );
    expect(offending, offending.join('\n')).toEqual([]);
  });

  it('reads the real statements: the audit insert is found and is not a change', () => {
    const audit = join(SRC, 'db', 'sql', 'audit.ts');
    const statements = statementsIn('audit.ts', readFileSync(audit, 'utf8'));
    expect(statements.some((s) => /INSERT INTO \$\{dialect\.quoteId\(AUDIT_TABLE\)\}/.test(s))).toBe(true);
    expect(auditChangesIn('audit.ts', readFileSync(audit, 'utf8'))).toEqual([]);
  });

  it('would notice a planted statement that did, and ignores one in a comment', () => {
    const planted = [
      '// DELETE FROM taskrecon_audit is never written: this comment does not count',
      'export const purge = (db: Db) =>',
      '  db.execute(`DELETE FROM ${dialect.quoteId(AUDIT_TABLE)}',
      '    WHERE created_at < ?`, [cutoff]);',
      "export const fix = 'UPDATE taskrecon_audit SET reason = ?';",
      "export const add = 'INSERT INTO taskrecon_audit (a) VALUES (?)';",
    ].join('\n');
    expect(auditChangesIn('planted.ts', planted)).toEqual([
      'planted.ts: DELETE FROM ${dialect.quoteId(AUDIT_TABLE)} WHERE created_at < ?',
      'planted.ts: UPDATE taskrecon_audit SET reason = ?',
    ]);
  });
});
