import { describe, expect, it } from 'vitest';
import type { TaskreconError } from '../../src/errors.js';
import { displayDsn, maskDsnText, parseDsn, resolveFileDsn } from '../../src/db/dsn.js';

describe('DSN', () => {
  it('parses a MySQL DSN and never shows its password', () => {
    const dsn = parseDsn('mysql://app:s3cr%40t@127.0.0.1:3307/shop');
    expect(dsn).toMatchObject({
      kind: 'mysql',
      user: 'app',
      password: 's3cr@t',
      host: '127.0.0.1',
      port: 3307,
      database: 'shop',
    });
    expect(displayDsn(dsn)).toBe('mysql://app:***@127.0.0.1:3307/shop');
    expect(displayDsn(dsn)).not.toContain('s3cr');
  });

  it('masks passwords inside any message', () => {
    expect(maskDsnText('cannot use mysql://root:hunter2@db:3306/x or mariadb://a:b@c/d')).toBe(
      'cannot use mysql://root:***@db:3306/x or mariadb://a:***@c/d',
    );
  });

  it('parses a PostgreSQL DSN: both schemes, the default port 5432, sslmode kept, the password masked', () => {
    const dsn = parseDsn('postgresql://app:s3cr%40t@db.internal/shop?sslmode=require');
    expect(dsn).toMatchObject({
      kind: 'postgres',
      user: 'app',
      password: 's3cr@t',
      host: 'db.internal',
      port: 5432,
      database: 'shop',
    });
    expect('params' in dsn && dsn.params.get('sslmode')).toBe('require');
    expect(displayDsn(dsn)).toBe('postgres://app:***@db.internal:5432/shop');
    expect(parseDsn('postgres://u@h:6432/db')).toMatchObject({ kind: 'postgres', port: 6432 });
    expect(maskDsnText('cannot use postgres://app:hunter2@db:5432/x?sslmode=disable')).toBe(
      'cannot use postgres://app:***@db:5432/x?sslmode=disable',
    );
  });

  it('parses sqlite paths', () => {
    expect(parseDsn('sqlite:/tmp/x.sqlite')).toEqual({ kind: 'sqlite', file: '/tmp/x.sqlite' });
    expect(parseDsn('sqlite:rel.sqlite')).toEqual({ kind: 'sqlite', file: 'rel.sqlite' });
  });

  it('rejects what is not a DSN, naming the fix', () => {
    expect(() => parseDsn('oracle://a@b/c')).toThrow(/unsupported DSN scheme 'oracle'/);
    expect(() => parseDsn('mysql://a:pw@b:3306/')).toThrow(/names no database/);
    expect(() => parseDsn('mysql://a:pw@b:3306/')).not.toThrow(/pw/);
  });

  it('names the supported engines for an unknown scheme, and the scheme meant when one is close', () => {
    const caught = (text: string) => {
      try {
        parseDsn(text);
      } catch (error) {
        return error as TaskreconError;
      }
      throw new Error(`${text} was accepted`);
    };
    const typo = caught('mysq://app:pw@127.0.0.1:3306/shop');
    expect(typo.exit).toBe(3);
    expect(typo.message).toMatch(/unsupported DSN scheme 'mysq'/);
    expect(typo.message).toMatch(/MySQL\/MariaDB \(mysql:\/\/, mariadb:\/\/\)/);
    expect(typo.message).toMatch(/PostgreSQL \(postgres:\/\/, postgresql:\/\/\)/);
    expect(typo.message).toMatch(/SQLite \(sqlite:PATH\)/);
    expect(typo.hint).toMatch(/^Did you mean mysql:\/\/\?/);
    expect(`${typo.message} ${typo.hint}`).not.toContain('pw');
    expect(caught('postgress://a@b/c').hint).toMatch(/^Did you mean postgres:\/\/\?/);
    expect(caught('sqlit:/tmp/x.sqlite').hint).toMatch(/^Did you mean sqlite:PATH\?/);
    // Nothing close: the engines only, no guess.
    const far = caught('oracle://a@b/c');
    expect(far.message).toMatch(/MySQL\/MariaDB/);
    expect(far.hint).not.toMatch(/Did you mean/);
  });

  it('resolves a relative file path against the config folder, and leaves anything else', () => {
    expect(resolveFileDsn('sqlite:tasks.sqlite', '/etc/app')).toBe('sqlite:/etc/app/tasks.sqlite');
    expect(resolveFileDsn('sqlite:/var/tasks.sqlite', '/etc/app')).toBe('sqlite:/var/tasks.sqlite');
    expect(resolveFileDsn('sqlite::memory:', '/etc/app')).toBe('sqlite::memory:');
    expect(resolveFileDsn('mysql://a@b:3306/db', '/etc/app')).toBe('mysql://a@b:3306/db');
  });
});
