import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type { Db } from '../../src/db/types.js';
import type { ScanOptions } from '../../src/verbs/scan/index.js';
import { runCli } from '../support/cli.js';
import { createEngineDb, type EngineDb } from '../support/engine-db.js';
import { readRecorded as read } from '../support/recording-db.js';

/**
 * Pages of a list read ahead cut by next-retry time (src/db/sql/page-cuts.ts) where the keys are
 * far from even, on MariaDB: a first page whose rows all fall on one second, then one row every
 * 1,000 seconds for 400,000 seconds. The cuts must widen across the gaps (four times the span of
 * each empty page read out) instead of cutting one second at a time, and a list whose rows all
 * share one time must come as its first page and the rest. Every line as page after page gives it.
 */
const TIES = 600;
const SPARSE = 400;
const PAGE = 97;

describe('scan ndjson pages cut by next-retry time on uneven keys (mysql)', () => {
  let edb: EngineDb;
  let db: Db;
  let source: BoundSource;
  let options: ScanOptions;

  beforeAll(async () => {
    edb = await createEngineDb('mysql', 'cuts');
    const init = await runCli(['init', '--db', edb.dsn]);
    expect(init.code, init.stderr).toBe(0);
    const at = (seconds: number) =>
      new Date(Date.UTC(2024, 0, 1) + seconds * 1000).toISOString().slice(0, 19).replace('T', ' ');
    const rows = [
      ...Array.from({ length: TIES }, (_, i) => ['coupon', `tie-${i}`, `evt-tie-${i}`, 0, 0, at(0)]),
      ...Array.from({ length: SPARSE }, (_, i) => [
        'coupon',
        `s-${i}`,
        `evt-s-${i}`,
        0,
        0,
        at(1_000 * (i + 1)),
      ]),
    ];
    await edb.insertRows(
      'async_task',
      ['biz_type', 'biz_id', 'event_id', 'status', 'retry_count', 'next_retry_time'],
      rows,
    );
    await edb.run('ANALYZE TABLE async_task');
    db = await connect(edb.dsn);
    source = await bindSource(db, asyncTask, 'cuts');
    options = { nowEpoch: await db.nowEpoch(), stuckAfterMs: 600_000, limit: 0, pageSize: PAGE };
  }, 180_000);

  afterAll(async () => {
    await db?.close();
    await edb?.drop();
  });

  it('widens the cuts across gaps: a few pages, not one a second, every line once', async () => {
    const pageByPage = await read(source, { ...options, readAhead: false });
    const ahead = await read(source, { ...options, readAhead: {} });
    expect(pageByPage.text.split('\n').length - 1).toBe(TIES + SPARSE);
    expect(ahead.text).toBe(pageByPage.text);
    // The first page (PAGE rows of the tied second), then the rest of that second in one page cut
    // at the next whole second; then spans of 1, 4, 16 … seconds while pages come back empty.
    expect(ahead.rec.pageRows[0]).toBe(PAGE);
    expect(ahead.rec.pageRows[1]).toBe(TIES - PAGE);
    expect(ahead.rec.pageRows.length).toBeGreaterThan(4);
    expect(ahead.rec.pageRows.length).toBeLessThan(40);
    expect(ahead.rec.pageRows.reduce((a, b) => a + b, 0)).toBe(TIES + SPARSE);
  }, 60_000);

  it('a list whose rows share one time comes as its first page and the rest', async () => {
    // Due as of the tied second: the sparse rows, later, are not due yet.
    const [tiedAt] = await db.query<{ t: number }>(
      'SELECT UNIX_TIMESTAMP(MIN(next_retry_time)) AS t FROM async_task',
    );
    const tied = { ...options, nowEpoch: Number(tiedAt?.t) };
    const pageByPage = await read(source, { ...tied, readAhead: false });
    const ahead = await read(source, { ...tied, readAhead: {} });
    expect(ahead.text).toBe(pageByPage.text);
    expect(ahead.rec.pageRows).toEqual([PAGE, TIES - PAGE]);
  }, 60_000);
});
