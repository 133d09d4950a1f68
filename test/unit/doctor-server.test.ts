import { describe, expect, it } from 'vitest';
import type { ServerClock } from '../../src/db/sql/doctor.js';
import { supportsSkipLocked } from '../../src/db/engines/mysql/version.js';
import { clockCheck, versionCheck, zoneCheck } from '../../src/verbs/doctor/server.js';

const clock = (over: Partial<ServerClock> = {}): ServerClock => ({
  engine: 'mysql',
  version: '10.11.19-MariaDB-0+deb12u1',
  globalZone: 'SYSTEM',
  sessionZone: '+08:00',
  systemZone: 'UTC',
  nowEpoch: 1_800_000_000,
  now: '2027-01-15 16:00:00',
  utcNow: '2027-01-15 08:00:00',
  sessionOffsetSeconds: 8 * 3600,
  globalOffsetSeconds: 0,
  ...over,
});

describe('SKIP LOCKED support by server version', () => {
  it.each([
    ['10.6.0-MariaDB', true],
    ['10.5.23-MariaDB-log', false],
    ['11.4.2-MariaDB', true],
    ['8.0.1', true],
    ['8.0.0-dmr', false],
    ['5.7.44-log', false],
    ['8.4.3', true],
    ['garbage', false],
  ])('%s → %s', (version, supported) => {
    expect(supportsSkipLocked(version)).toBe(supported);
  });

  it('fails a server older than MySQL 8 / MariaDB 10.6', () => {
    expect(versionCheck(clock({ version: '5.7.44-log' })).status).toBe('fail');
    expect(versionCheck(clock({ version: '8.0.36' })).status).toBe('ok');
  });
});

describe('time zone check', () => {
  it('fails DATETIME columns when the server zone is not appTimeZone', () => {
    const [c] = zoneCheck({
      clock: clock(),
      appTimeZone: 'Asia/Shanghai',
      datetimeColumns: ['created_at'],
      connectWarnings: [],
    });
    expect(c?.status).toBe('fail');
    expect(c?.message).toContain('differs by 8h');
  });

  it('passes when the server zone agrees, or when no column is DATETIME', () => {
    const agree = clock({ globalOffsetSeconds: 8 * 3600 });
    expect(
      zoneCheck({
        clock: agree,
        appTimeZone: '+08:00',
        datetimeColumns: ['created_at'],
        connectWarnings: [],
      })[0]?.status,
    ).toBe('ok');
    expect(
      zoneCheck({ clock: clock(), appTimeZone: '+08:00', datetimeColumns: [], connectWarnings: [] })[0]
        ?.status,
    ).toBe('ok');
  });

  it('fails when the session could not be pinned to appTimeZone', () => {
    const unpinned = clock({ sessionOffsetSeconds: 0, globalOffsetSeconds: 8 * 3600 });
    expect(
      zoneCheck({
        clock: unpinned,
        appTimeZone: '+08:00',
        datetimeColumns: ['created_at'],
        connectWarnings: [],
      })[0]?.status,
    ).toBe('fail');
  });
});

describe('clock skew', () => {
  it('warns past 5 seconds either way, ok within', () => {
    expect(clockCheck(clock(), 1_800_000_003).status).toBe('ok');
    expect(clockCheck(clock(), 1_800_000_010).status).toBe('warn');
    expect(clockCheck(clock(), 1_799_999_990).skewSeconds).toBe(10);
  });
});

describe('TIMESTAMP columns', () => {
  it('warn, not fail, when appTimeZone is not the server zone; ok when it is', () => {
    const input = {
      clock: clock(),
      datetimeColumns: [],
      timestampColumns: ['failed_at'],
      connectWarnings: [],
    };
    expect(zoneCheck({ ...input, appTimeZone: 'Asia/Shanghai' })[0]?.status).toBe('warn');
    expect(zoneCheck({ ...input, appTimeZone: 'UTC' })[0]?.status).toBe('ok');
    expect(zoneCheck({ ...input, appTimeZone: undefined })[0]?.status).toBe('ok');
  });
});
