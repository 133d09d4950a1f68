import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('the audit log is append-only', () => {
  it('no statement in the code updates, deletes or truncates audit rows', () => {
    const offending = sources(SRC).filter((file) =>
      /\b(UPDATE|DELETE\s+FROM|TRUNCATE(\s+TABLE)?|REPLACE\s+INTO)\s+[`"]?(\$\{[^}]*AUDIT_TABLE[^}]*\}|taskrecon_audit)/i.test(
        readFileSync(file, 'utf8'),
      ),
    );
    expect(offending).toEqual([]);
  });

  it('would notice one that did', () => {
    const pattern =
      /\b(UPDATE|DELETE\s+FROM|TRUNCATE(\s+TABLE)?|REPLACE\s+INTO)\s+[`"]?(\$\{[^}]*AUDIT_TABLE[^}]*\}|taskrecon_audit)/i;
    expect(pattern.test('DELETE FROM taskrecon_audit WHERE id = ?')).toBe(true);
    expect(pattern.test('UPDATE ${dialect.quoteId(AUDIT_TABLE)} SET reason = ?')).toBe(true);
    expect(pattern.test('INSERT INTO ${dialect.quoteId(AUDIT_TABLE)} (a) VALUES (?)')).toBe(false);
  });
});
