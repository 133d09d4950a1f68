import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type { Db } from '../../src/db/types.js';
import { AHEAD_PRIMARY_PAGES } from '../../src/db/sql/ahead-limits.js';
import type { ScanOptions } from '../../src/verbs/scan/index.js';
import { runCli } from '../support/cli.js';
import { createEngineDb, type EngineDb } from '../support/engine-db.js';
import { readRecorded as read } from '../support/recording-db.js';

/**
 * A whole NDJSON list streamed in primary-key order through the primary key (no --order, the list
 * a large share of a large table: MariaDB's primaryKeyWalk) is read pages ahead, each page a range
 * of ids cut by value: the primary key's walk reads table rows, so bounds counted along it would
 * read each page twice, but a range of ids needs no bound but the list's first and last id. On
 * 130,000 rows, 50,000 due (their times out of id order) with a stretch of 30,000 ids holding none.
 */
const DUE = 50_000;
const ROWS = 130_000;
const PAGE = 1_000;

describe('scan ndjson read ahead in primary-key order (mysql)', () => {
  let edb: EngineDb;
  let db: Db;
  let source: BoundSource;
  let options: ScanOptions;
  let pageByPage: string;
  /** The statements of that read, page after page. */
  let pageByPageRec: Awaited<ReturnType<typeof read>>['rec'];

  beforeAll(async () => {
    edb = await createEngineDb('mysql', 'ahead_pk');
    const init = await runCli(['init', '--db', edb.dsn]);
    expect(init.code, init.stderr).toBe(0);
    // Due: every other id of 1–40,000 and of 70,001–130,000; ids 40,001–70,000 hold none. Times
    // out of id order (seq % 3).
    await edb.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, created_at, updated_at)
       SELECT 'coupon', CONCAT('b', seq), CONCAT('e', seq), '{}',
              CASE WHEN seq % 2 = 0 AND (seq <= 40000 OR seq > 70000) THEN 0 ELSE 2 END, 1,
              NOW() - INTERVAL (600 * (1 + seq % 3)) SECOND, NOW() - INTERVAL 2 HOUR, NOW() - INTERVAL 1 HOUR
         FROM seq_1_to_${ROWS}`,
    );
    await edb.run('ANALYZE TABLE async_task');
    db = await connect(edb.dsn);
    source = await bindSource(db, asyncTask, 'ahead_pk');
    options = {
      nowEpoch: await db.nowEpoch(),
      stuckAfterMs: 600_000,
      limit: 0,
      pageSize: PAGE,
      order: 'cheapest',
    };
    ({ text: pageByPage, rec: pageByPageRec } = await read(source, { ...options, readAhead: false }));
  }, 180_000);

  afterAll(async () => {
    await db?.close();
    await edb?.drop();
  });

  it('the list is read through the primary key, in id order', async () => {
    const ids = pageByPage
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: number }).id);
    expect(ids.length).toBe(DUE);
    for (let i = 1; i < ids.length; i++) expect(ids[i]!).toBeGreaterThan(ids[i - 1]!);
    expect(pageByPageRec.pages[0]).toMatch(/FORCE INDEX \(PRIMARY\) WHERE .* ORDER BY `id` LIMIT 1000$/);
  });

  it('reads ahead by ranges of ids: two dives, no counted bound, pages at once, the same bytes', async () => {
    const { text, rec } = await read(source, options);
    expect(text).toBe(pageByPage);
    expect(rec.queries.filter((q) => /^SELECT .* LIMIT 1 OFFSET/.test(q.sql))).toEqual([]);
    const dives = rec.queries.filter((q) => /^SELECT .* LIMIT 1$/.test(q.sql));
    expect(dives.map((q) => / DESC LIMIT 1$/.test(q.sql)).sort()).toEqual([false, true]);
    // One page ahead of the one streaming out (AHEAD_PRIMARY_PAGES).
    expect(AHEAD_PRIMARY_PAGES).toBe(1);
    expect(rec.maxOpen()).toBe(2);
    // Every page after the first a range of ids (the last open above), cut at increasing ids.
    const middle = rec.pages.slice(1, -1);
    expect(middle.length).toBeGreaterThan(2);
    for (const sql of [...middle, rec.pages.at(-1)!]) expect(sql).toMatch(/FORCE INDEX \(PRIMARY\)/);
    const cuts = middle.map((sql, i) => {
      expect(sql).toMatch(/ AND \(`id` > \?\) AND \(`id` <= \?\) ORDER BY `id`$/);
      return rec.pageParams[i + 1]!.at(-1) as number;
    });
    for (let i = 1; i < cuts.length; i++) expect(cuts[i]!).toBeGreaterThan(cuts[i - 1]!);
    expect(rec.pages.at(-1)).not.toMatch(/`id` <= \?/);
    expect(rec.pageRows.reduce((a, b) => a + b, 0)).toBe(DUE);
    // Pages follow the density; the 30,000 ids without a due row are crossed in a few pages.
    expect(rec.pages.length).toBeLessThan((2 * DUE) / PAGE);
  }, 60_000);

  it('asked to cut by count, it reads page after page (a counted bound would read table rows)', async () => {
    const { text, rec } = await read(source, { ...options, readAhead: { cut: 'count' } });
    expect(text).toBe(pageByPage);
    expect(rec.queries.filter((q) => /^SELECT .* LIMIT 1 OFFSET/.test(q.sql))).toEqual([]);
    expect(rec.maxOpen()).toBe(1);
    expect(rec.pages.length).toBe(DUE / PAGE + 1);
  }, 60_000);
});
