import { describe, expect, it } from 'vitest';
import { buildTrend, mergeTrendRows, trendStart } from '../../src/core/trend.js';
import { renderTrend, sparkline } from '../../src/render/trend.js';
import { decodeCursor, encodeCursor, parseListQuery, parseWhen } from '../../src/console/filters.js';

const NOW = 1_764_590_400 + 1_800; // 2025-12-01T12:30:00Z

describe('trend series', () => {
  it('fills every bucket of the span, oldest first, with the report definitions', () => {
    const first = trendStart('24h', NOW);
    const trend = buildTrend('24h', NOW, [
      { start: first, created: 10, failed: 2, succeeded: 8, latencySum: 80 },
      { start: first + 23 * 3600, created: 4, failed: 0, succeeded: 0, latencySum: null },
    ]);
    expect(trend.points).toHaveLength(24);
    expect(trend.points[0]).toMatchObject({
      created: 10,
      failed: 2,
      failureRate: 0.2,
      latencyAvgSeconds: 10,
    });
    expect(trend.points[23]).toMatchObject({ created: 4, failureRate: 0, latencyAvgSeconds: null });
    expect(trend.points[5]).toMatchObject({ created: 0, failed: 0, failureRate: null });
    // The last bucket holds now.
    expect(NOW - (trend.points[23]?.start ?? 0)).toBeLessThan(3600);
  });

  it("adds shards' buckets: counts and latency sums, a bucket only one shard has kept as it is", () => {
    const first = trendStart('24h', NOW);
    const merged = mergeTrendRows([
      [
        { start: first, created: 10, failed: 2, succeeded: 8, latencySum: 80 },
        { start: first + 3600, created: 1, failed: 1, succeeded: 0, latencySum: null },
      ],
      [{ start: first, created: 6, failed: 0, succeeded: 4, latencySum: 120 }],
      [{ start: first + 3600, created: 2, failed: 0, succeeded: 0, latencySum: null }],
    ]);
    expect(merged).toEqual([
      { start: first, created: 16, failed: 2, succeeded: 12, latencySum: 200 },
      { start: first + 3600, created: 3, failed: 1, succeeded: 0, latencySum: null },
    ]);
    // The merged trend is the one of a single table: latency averaged over every success.
    expect(buildTrend('24h', NOW, merged).points[0]).toMatchObject({
      failureRate: 2 / 16,
      latencyAvgSeconds: 200 / 12,
    });
  });

  it('has 28 six-hour buckets over 7 days', () => {
    expect(buildTrend('7d', NOW, []).points).toHaveLength(28);
  });
});

describe('console list filters', () => {
  it('reads the list form, defaulting to failed', () => {
    const q = parseListQuery(new URLSearchParams('list=bogus&biz=sms, order&error=timeout'));
    expect(q).toMatchObject({ list: 'failed', bizTypes: ['sms', 'order'], error: 'timeout', payload: '' });
  });

  it('round-trips a cursor and refuses a tampered one as bad input', () => {
    expect(decodeCursor(encodeCursor({ nrt: 17, id: 42 }))).toEqual({ nrt: 17, id: 42 });
    expect(decodeCursor(encodeCursor({ nrt: null, id: 'abc' }))).toEqual({ nrt: null, id: 'abc' });
    const exact = { nrt: '2024-02-29 23:59:58.123456+00', id: 7 };
    expect(decodeCursor(encodeCursor(exact))).toEqual(exact);
    expect(decodeCursor(undefined)).toBeUndefined();
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    for (const bad of [
      'not-a-cursor',
      'a b',
      b64('[{"x":1},2]'),
      b64('[1,2,3]'),
      b64('[true,2]'),
      b64('[1,1.5]'),
      b64('[1, 2]'), // not as encodeCursor writes it
      b64(`["${'9'.repeat(600)}",1]`),
    ])
      expect(() => decodeCursor(bad), bad).toThrow(/after:/);
  });

  it('reads times as ISO or a duration ago, and names a bad one', () => {
    expect(parseWhen('2h', NOW, 'since')).toBe(NOW - 7200);
    expect(parseWhen('2025-12-01T00:00:00Z', NOW, 'since')).toBe(1_764_547_200);
    expect(() => parseWhen('yesterday-ish', NOW, 'since')).toThrow(/since/);
  });
});

describe('report --trend sparklines', () => {
  it('scales each series to its own maximum and leaves a gap where nothing was measured', () => {
    expect(sparkline([0, 1, 2, 4, 8])).toBe('▁▂▃▅█');
    expect(sparkline([null, 0, 0])).toBe(' ▁▁');
    expect(sparkline([0.1, null, 0.2])).toBe('▅ █');
  });

  it('prints the four series of a span', () => {
    const text = renderTrend(buildTrend('24h', NOW, []));
    expect(text.split('\n')).toHaveLength(5);
    expect(text).toContain('failure rate');
    expect(text).toContain('now n/a');
  });

  it('prints latencies and bucket sizes as every other command does (1h46m, not seconds)', () => {
    const first = trendStart('7d', NOW);
    const trend = buildTrend('7d', NOW, [
      { start: first, created: 2, failed: 0, succeeded: 2, latencySum: 2 * 45 },
      { start: first + 27 * 6 * 3600, created: 1, failed: 0, succeeded: 1, latencySum: 6_360 },
    ]);
    const latency = renderTrend(trend)
      .split('\n')
      .find((line) => line.includes('latency avg'));
    expect(latency).toMatch(/now 1h46m, max 1h46m$/);
    expect(renderTrend(trend)).toContain('28 buckets of 6h');
    expect(renderTrend(trend)).not.toMatch(/\d\.\ds\b/);
  });
});
