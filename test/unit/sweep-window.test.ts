import { describe, expect, it } from 'vitest';
import {
  eligibleAt,
  everEligible,
  isEligible,
  localSecondOfDay,
  parseDailyRange,
  type DailyRange,
  type Schedule,
} from '../../src/core/sweep-window.js';

const range = (text: string) => parseDailyRange(text) as DailyRange;
/** Epoch seconds of a wall-clock time in Asia/Shanghai (UTC+8, no DST). */
const shanghai = (iso: string) => Date.parse(`${iso}+08:00`) / 1000;
const warehouse: Schedule = {
  window: range('09:00-18:00'),
  blackouts: [range('01:00-05:00')],
  zone: 'Asia/Shanghai',
};

describe('daily ranges', () => {
  it('parses HH:MM-HH:MM, 24:00 as an end, and rejects empty or impossible ranges', () => {
    expect(range('09:00-18:00')).toMatchObject({ start: 9 * 3600, end: 18 * 3600 });
    expect(range('22:00-24:00')).toMatchObject({ start: 22 * 3600, end: 0 });
    expect(parseDailyRange('9-18')).toMatch(/not a daily range/);
    expect(parseDailyRange('25:00-26:00')).toMatch(/does not exist/);
    expect(parseDailyRange('09:00-09:00')).toMatch(/empty/);
  });
});

describe('window eligibility in appTimeZone', () => {
  it('is eligible just inside the window and not just outside it', () => {
    expect(isEligible(warehouse, shanghai('2026-12-01T09:00:00'))).toBe(true);
    expect(isEligible(warehouse, shanghai('2026-12-01T17:59:59'))).toBe(true);
    expect(isEligible(warehouse, shanghai('2026-12-01T08:59:59'))).toBe(false);
    expect(isEligible(warehouse, shanghai('2026-12-01T18:00:00'))).toBe(false);
  });

  it('reads the wall clock of the zone, not UTC', () => {
    // 02:00 UTC is 10:00 in Shanghai: inside; in UTC it would be outside.
    const t = Date.parse('2026-12-01T02:00:00Z') / 1000;
    expect(localSecondOfDay(t, 'Asia/Shanghai')).toBe(10 * 3600);
    expect(isEligible(warehouse, t)).toBe(true);
    expect(isEligible({ ...warehouse, zone: 'UTC' }, t)).toBe(false);
  });

  it('runs a window across midnight', () => {
    const night: Schedule = { window: range('22:00-06:00'), blackouts: [], zone: 'Asia/Shanghai' };
    expect(isEligible(night, shanghai('2026-12-01T23:30:00'))).toBe(true);
    expect(isEligible(night, shanghai('2026-12-02T05:59:59'))).toBe(true);
    expect(isEligible(night, shanghai('2026-12-02T06:00:00'))).toBe(false);
    expect(isEligible(night, shanghai('2026-12-01T21:59:59'))).toBe(false);
    expect(eligibleAt(night, shanghai('2026-12-02T07:00:00'))).toBe(shanghai('2026-12-02T22:00:00'));
  });

  it('keeps a blackout across midnight out of an all-day rule', () => {
    const s: Schedule = { blackouts: [range('23:00-02:00')], zone: 'Asia/Shanghai' };
    expect(isEligible(s, shanghai('2026-12-01T23:00:00'))).toBe(false);
    expect(isEligible(s, shanghai('2026-12-02T01:59:59'))).toBe(false);
    expect(isEligible(s, shanghai('2026-12-02T02:00:00'))).toBe(true);
    expect(eligibleAt(s, shanghai('2026-12-01T23:30:00'))).toBe(shanghai('2026-12-02T02:00:00'));
  });
});

describe('eligibleAt', () => {
  it('is now when eligible, else the next opening', () => {
    const now = shanghai('2026-12-01T10:00:00');
    expect(eligibleAt(warehouse, now)).toBe(now);
    expect(eligibleAt(warehouse, shanghai('2026-12-01T03:00:00'))).toBe(shanghai('2026-12-01T09:00:00'));
    expect(eligibleAt(warehouse, shanghai('2026-12-01T19:00:00'))).toBe(shanghai('2026-12-02T09:00:00'));
  });

  it('waits for a blackout that ends inside the window', () => {
    const s: Schedule = { window: range('00:00-12:00'), blackouts: [range('01:00-05:00')], zone: 'UTC' };
    const at = Date.parse('2026-12-01T02:00:00Z') / 1000;
    expect(eligibleAt(s, at)).toBe(Date.parse('2026-12-01T05:00:00Z') / 1000);
  });

  it('follows the wall clock across a DST change', () => {
    // New York springs forward on 2026-03-08: 09:00 local is 13:00Z that day, 14:00Z the day before.
    const s: Schedule = { window: range('09:00-17:00'), blackouts: [], zone: 'America/New_York' };
    const evening = Date.parse('2026-03-07T23:00:00Z') / 1000;
    expect(eligibleAt(s, evening)).toBe(Date.parse('2026-03-08T13:00:00Z') / 1000);
  });

  it('says never for a window covered by its blackouts', () => {
    const never = { window: range('09:00-18:00'), blackouts: [range('08:00-12:00'), range('12:00-19:00')] };
    expect(everEligible(never)).toBe(false);
    expect(eligibleAt({ ...never, zone: 'UTC' }, 0)).toBeNull();
    expect(everEligible({ window: range('09:00-18:00'), blackouts: [range('08:00-17:59')] })).toBe(true);
  });
});
