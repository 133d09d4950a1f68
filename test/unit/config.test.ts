import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { prepareConfigReader } from '../../src/config/find.js';
import { findConfigFile, loadConfig, validateConfig } from '../../src/config/load.js';
import { Context } from '../../src/context.js';

describe('config', () => {
  // BaseCommand prepares the reader before a command runs; a Context built directly needs it too.
  beforeAll(() => prepareConfigReader('taskrecon.config.yaml', tmpdir()));

  it('is found upward from the working directory', () => {
    const root = mkdtempSync(join(tmpdir(), 'taskrecon-cfg-'));
    const deep = join(root, 'a', 'b');
    mkdirSync(deep, { recursive: true });
    writeFileSync(join(root, 'taskrecon.config.yml'), 'db: sqlite:x.sqlite\n');
    expect(findConfigFile(deep)).toBe(join(root, 'taskrecon.config.yml'));
    expect(loadConfig(undefined, deep).config.db).toBe('sqlite:x.sqlite');
  });

  it('names a mistyped key and suggests the right one', () => {
    expect(() => validateConfig({ sourcs: {} }, 'c.yaml')).toThrow(/unknown key 'sourcs'/);
    try {
      validateConfig({ sources: { tasks: { profil: 'async-task' } } }, 'c.yaml');
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toContain("unknown key 'sources.tasks.profil'");
      expect((error as { hint: string }).hint).toContain("Did you mean 'profile'?");
    }
  });

  it('takes flags over environment over config', () => {
    const root = mkdtempSync(join(tmpdir(), 'taskrecon-cfg-'));
    writeFileSync(join(root, 'taskrecon.config.yaml'), 'db: mysql://cfg@127.0.0.1/a\n');
    expect(new Context({}, {}, root).dsn()).toBe('mysql://cfg@127.0.0.1/a');
    expect(new Context({}, { TASKRECON_DB: 'mysql://env@127.0.0.1/a' }, root).dsn()).toBe(
      'mysql://env@127.0.0.1/a',
    );
    expect(
      new Context(
        { db: 'mysql://flag@127.0.0.1/a' },
        { TASKRECON_DB: 'mysql://env@127.0.0.1/a' },
        root,
      ).dsn(),
    ).toBe('mysql://flag@127.0.0.1/a');
  });

  it('stops without a DSN and points to demo', () => {
    const root = mkdtempSync(join(tmpdir(), 'taskrecon-cfg-'));
    expect(() => new Context({}, {}, root).dsn()).toThrow('no database given');
    try {
      new Context({}, {}, root).dsn();
    } catch (error) {
      expect((error as { hint: string }).hint).toContain('taskrecon demo');
    }
  });

  it('picks the default source, refuses ambiguity, and suggests a mistyped source', () => {
    const root = mkdtempSync(join(tmpdir(), 'taskrecon-cfg-'));
    writeFileSync(
      join(root, 'taskrecon.config.yaml'),
      'sources:\n  tasks: { profile: async-task, default: true }\n  failed: { profile: laravel-failed-jobs }\n',
    );
    expect(new Context({}, {}, root).source().name).toBe('tasks');
    expect(new Context({ source: 'failed' }, {}, root).source().profile.name).toBe('laravel-failed-jobs');
    expect(() => new Context({ source: 'faild' }, {}, root).source()).toThrow("unknown source 'faild'");
  });

  it('builds a custom profile from columns and statuses', () => {
    const root = mkdtempSync(join(tmpdir(), 'taskrecon-cfg-'));
    writeFileSync(
      join(root, 'taskrecon.config.yaml'),
      'sources:\n  custom: { table: my_tasks, columns: { bizType: type, status: state, eventId: null }, statuses: { pending: NEW, failed: [DEAD, GONE] } }\n',
    );
    const { profile } = new Context({}, {}, root).source();
    expect(profile.table).toBe('my_tasks');
    expect(profile.fields.bizType).toEqual({ column: 'type' });
    expect(profile.fields.eventId).toBeUndefined();
    expect(profile.status).toEqual({
      kind: 'column',
      column: 'state',
      values: { pending: ['NEW'], failed: ['DEAD', 'GONE'] },
    });
  });
});
