import { describe, expect, it } from 'vitest';
import type { Dialect, DialectDdl } from '../../src/db/dialect.js';
import { parseDsn } from '../../src/db/dsn.js';
import { ENGINE_NAMES, engineFor, engineOfScheme } from '../../src/db/engines/registry.js';
import type { Engine, EngineName } from '../../src/db/engines/types.js';

/** Every member of each interface, as a Record so that a member added to the type must be listed here. */
const ENGINE_MEMBERS: Record<keyof Engine, true> = {
  name: true,
  dialect: true,
  embedded: true,
  defaultPort: true,
  open: true,
  withReadOnly: true,
  versionVerdict: true,
  skipLockedVerdict: true,
  serverClock: true,
  replicaLag: true,
  readPlan: true,
  indexOnly: true,
  listReadAhead: true,
  estimatedRows: true,
  primaryKeyWalk: true,
  idleTimeout: true,
  columnCollation: true,
  integerPrimaryKey: true,
  mayProbeSkipLocked: true,
  clockText: true,
  tableBloat: true,
  longTransactions: true,
  wallClockToInstant: true,
  planLines: true,
};

const DIALECT_MEMBERS: Record<keyof Dialect, true> = {
  quoteId: true,
  epochOf: true,
  exactEpochOf: true,
  epochParam: true,
  pageKeyOf: true,
  pageKeyParam: true,
  pageKeyForm: true,
  nowOf: true,
  nowEpoch: true,
  jsonText: true,
  prefix: true,
  explain: true,
  forUpdate: true,
  drivingJoin: true,
  indexesEndWithPrimaryKey: true,
  indexNamesPerTable: true,
  mergeKeys: true,
  mergeWeight: true,
  mergeOrder: true,
  keyHashes: true,
  keyHashSql: true,
  lowerCase: true,
  intDiv: true,
  keyRangeDigest: true,
  parallelReads: true,
  lockConflictCodes: true,
  castText: true,
  castInt: true,
  insertIgnore: true,
  textLike: true,
  insertUnlessConflict: true,
  auditEpoch: true,
  auditEpochParam: true,
  modifyColumn: true,
  addUniqueKey: true,
  ddl: true,
};

const DDL_MEMBERS: Record<keyof DialectDdl, true> = {
  asyncTask: true,
  jobRetries: true,
  audit: true,
  notify: true,
  alertClaim: true,
  queueSnapshot: true,
  intent: true,
  pushMarker: true,
  ack: true,
  referenceEffect: true,
};

describe('the engine registry', () => {
  it.each(ENGINE_NAMES)('has an engine named %s with every member defined', (name) => {
    const engine = engineFor(name);
    expect(engine.name).toBe(name);
    for (const member of Object.keys(ENGINE_MEMBERS)) {
      expect(engine[member as keyof Engine], `${name}: ${member}`).toBeDefined();
    }
    for (const member of Object.keys(DIALECT_MEMBERS)) {
      expect(engine.dialect[member as keyof Dialect], `${name}: dialect.${member}`).toBeDefined();
    }
    for (const member of Object.keys(DDL_MEMBERS)) {
      const ddl = engine.dialect.ddl[member as keyof DialectDdl];
      expect(typeof ddl, `${name}: dialect.ddl.${member}`).toBe('function');
      expect(ddl('t', 't').length, `${name}: dialect.ddl.${member} returns statements`).toBeGreaterThan(0);
    }
  });

  it('lists each engine once, and every engine object is distinct', () => {
    expect(new Set(ENGINE_NAMES).size).toBe(ENGINE_NAMES.length);
    expect(new Set(ENGINE_NAMES.map((name) => engineFor(name))).size).toBe(ENGINE_NAMES.length);
  });

  it('refuses a name it does not know instead of falling back to another engine', () => {
    expect(() => engineFor('oracle' as EngineName)).toThrow(/no engine named oracle/);
  });

  it('maps DSN schemes to engines: mariadb is the mysql engine, postgresql the postgres one, an unknown scheme none', () => {
    expect(engineOfScheme('mysql')).toBe('mysql');
    expect(engineOfScheme('mariadb')).toBe('mysql');
    expect(engineOfScheme('sqlite')).toBe('sqlite');
    expect(engineOfScheme('postgres')).toBe('postgres');
    expect(engineOfScheme('postgresql')).toBe('postgres');
    expect(engineOfScheme('oracle')).toBeUndefined();
    expect(parseDsn('mariadb://u@h/db').kind).toBe('mysql');
    expect(parseDsn('sqlite:x.db').kind).toBe('sqlite');
  });
});
