import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type { Db } from '../../src/db/types.js';
import { AHEAD_PAGES } from '../../src/db/sql/ahead-limits.js';
import { NdjsonWireEncoder } from '../../src/render/ndjson-wire.js';
import { rowSerializer } from '../../src/render/task-rows.js';
import { streamListBatches, streamListEncoded, type ScanOptions } from '../../src/verbs/scan/index.js';
import { runCli } from '../support/cli.js';
import { createEngineDb, type EngineDb } from '../support/engine-db.js';
import { recording } from '../support/recording-db.js';

/**
 * A whole NDJSON list read pages ahead (src/db/sql/list-ahead.ts): 3,000 due rows whose
 * next-retry times repeat (keyset ties across page bounds) among 20,000 rows of other statuses, read
 * in pages of 97. Every line must come once, in (next_retry_time, id) order, byte for byte what page
 * after page gives; the pages must really overlap (statements streaming at once, never more than
 * the page streaming out and AHEAD_PAGES read ahead); pages cut by key value (page-cuts.ts,
 * MariaDB's numeric keys) and by count (every PAGE-th row's key, PostgreSQL's time text) give the
 * same bytes; and where the bounds cannot come from the index alone, the list is read page after page.
 */
const DUE = 3_000;
const OTHER = 20_000;
const PAGE = 97;

/** The list's lines; a reader taking `pauseMs` over each chunk gives the pages ahead time to start. */
async function lines(
  source: BoundSource,
  options: ScanOptions,
  pauseMs = 0,
): Promise<{ text: string; rows: number }> {
  const encoder = new NdjsonWireEncoder(source.sql, 'due');
  const chunks: Buffer[] = [];
  for await (const chunk of streamListEncoded(source, 'due', options, encoder) ?? []) {
    chunks.push(Buffer.from(chunk));
    encoder.recycle(chunk);
    if (pauseMs > 0) await sleep(pauseMs);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), rows: encoder.rows };
}

describe.each(['mysql', 'postgres'] as const)('scan ndjson read pages ahead on %s', (engine) => {
  let edb: EngineDb;
  let db: Db;
  let source: BoundSource;
  let options: ScanOptions;
  let pageByPage: string;

  beforeAll(async () => {
    edb = await createEngineDb(engine, 'ahead');
    const init = await runCli(['init', '--db', edb.dsn]);
    expect(init.code, init.stderr).toBe(0);
    // Due rows on past times shared by many rows: the first half scattered over 400 seconds and
    // their quarters (ids out of time order), the second in runs of 50 consecutive ids on one
    // second (ties across bounds). MySQL's DATETIME(6) keeps the fractions (init makes whole seconds).
    if (engine === 'mysql') await edb.run('ALTER TABLE async_task MODIFY next_retry_time DATETIME(6) NULL');
    const second = (i: number) => (i < DUE / 2 ? (i * 7919) % 400 : 400 + Math.floor(i / 50));
    const due = Array.from({ length: DUE }, (_, i) => {
      const t = new Date(Date.UTC(2024, 1, 29, 12, 0, 0) + second(i) * 1000);
      const fraction = i < DUE / 2 ? `.${String((i % 4) * 250_000).padStart(6, '0')}` : '';
      const text = t.toISOString().slice(0, 19).replace('T', ' ') + fraction;
      return ['coupon', `biz-${i}`, `evt-${i}`, 0, i % 5, engine === 'postgres' ? `${text}+00` : text];
    });
    await edb.insertRows(
      'async_task',
      ['biz_type', 'biz_id', 'event_id', 'status', 'retry_count', 'next_retry_time'],
      due,
    );
    const other = Array.from({ length: OTHER }, (_, i) => ['sms', `o-${i}`, `o-evt-${i}`, 2, 0]);
    for (let at = 0; at < other.length; at += 5_000)
      await edb.insertRows(
        'async_task',
        ['biz_type', 'biz_id', 'event_id', 'status', 'retry_count'],
        other.slice(at, at + 5_000),
      );
    // VACUUM marks PostgreSQL's pages all-visible, so its planner reads the bounds by an Index Only Scan.
    await edb.run(engine === 'postgres' ? 'VACUUM ANALYZE async_task' : 'ANALYZE TABLE async_task');
    db = await connect(edb.dsn);
    source = await bindSource(db, asyncTask, 'ahead');
    options = { nowEpoch: await db.nowEpoch(), stuckAfterMs: 600_000, limit: 0, pageSize: PAGE };
    pageByPage = (await lines(source, { ...options, readAhead: false })).text;
  }, 180_000);

  afterAll(async () => {
    await db?.close();
    await edb?.drop();
  });

  it('page after page gives every due row once, in (next_retry_time, id) order, as the row serializer writes it', async () => {
    const serializer = rowSerializer(source.sql);
    let slow = '';
    for await (const batch of streamListBatches(source, 'due', { ...options, pageSize: 100_000 }) ?? [])
      slow += serializer.ndjsonBatch('due', batch);
    expect(pageByPage.split('\n').length - 1).toBe(DUE);
    // The page keys carry fractions of a second: three quarters of the first half.
    const [fractions] = await edb.rows<{ n: number }>(
      engine === 'postgres'
        ? `SELECT COUNT(*)::int AS n FROM async_task WHERE status = 0 AND EXTRACT(MICROSECONDS FROM next_retry_time)::int % 1000000 > 0`
        : 'SELECT COUNT(*) AS n FROM async_task WHERE status = 0 AND MICROSECOND(next_retry_time) > 0',
    );
    expect(Number(fractions?.n)).toBe((DUE / 2) * 0.75);
    expect(pageByPage).toBe(slow);
    const keys = pageByPage
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; nextRetryAt: string });
    for (let i = 1; i < keys.length; i++) {
      const [a, b] = [keys[i - 1]!, keys[i]!];
      expect(a.nextRetryAt < b.nextRetryAt || (a.nextRetryAt === b.nextRetryAt && a.id < b.id)).toBe(true);
    }
  });

  it('read ahead, pages cut by count: the same bytes, pages streaming at once, bounds read from the index', async () => {
    const rec = recording(db);
    const got = await lines({ ...source, db: rec.db }, { ...options, readAhead: { cut: 'count' } });
    expect(got.rows).toBe(DUE);
    expect(got.text).toBe(pageByPage);
    const bounds = rec.queries.filter((q) =>
      new RegExp(`^SELECT .* LIMIT 1 OFFSET ${PAGE - 1}$`).test(q.sql),
    );
    // The first page is read alone; then one bound per full page of the 2,903 rows left (29), and
    // the one that finds the last page is the rest: 31 pages in all, as page after page.
    expect(bounds.length).toBe(Math.floor((DUE - PAGE) / PAGE) + 1);
    expect(rec.pages.length).toBe(Math.ceil(DUE / PAGE));
    expect(rec.maxOpen()).toBeGreaterThanOrEqual(2);
    expect(rec.maxOpen()).toBeLessThanOrEqual(1 + AHEAD_PAGES);
  }, 60_000);

  it(`read ahead, pages cut by value${engine === 'postgres' ? ' where keys are numbers (time keys, text here, are cut by count)' : ''}: two dives for the whole list, no bound per page, the same bytes`, async () => {
    const rec = recording(db);
    const got = await lines({ ...source, db: rec.db }, { ...options, readAhead: {} });
    expect(got.rows).toBe(DUE);
    expect(got.text).toBe(pageByPage);
    const offsets = rec.queries.filter((q) => /^SELECT .* LIMIT 1 OFFSET/.test(q.sql));
    const dives = rec.queries.filter((q) => /^SELECT .* LIMIT 1$/.test(q.sql));
    // The list's first key and its last, read at once while the first page streams.
    expect(dives.map((q) => / DESC LIMIT 1$/.test(q.sql)).sort()).toEqual([false, true]);
    if (engine === 'postgres') {
      expect(offsets.length).toBe(Math.floor((DUE - PAGE) / PAGE) + 1);
      return;
    }
    expect(offsets).toEqual([]);
    // Every page after the first ends at a whole second taking every row of it (ties at a cut: the
    // runs of 50 rows on one second), the last takes the rest.
    const cuts = rec.pages.slice(1, -1).map((sql, i) => {
      expect(sql).toMatch(/`next_retry_time` <= FROM_UNIXTIME\(\?\)\) ORDER BY/);
      return rec.pageParams[i + 1]!.at(-1) as number;
    });
    expect(cuts.length).toBeGreaterThan(2);
    for (const [i, cut] of cuts.entries()) {
      expect(Number.isInteger(cut)).toBe(true);
      if (i > 0) expect(cut).toBeGreaterThan(cuts[i - 1]!);
    }
    expect(rec.pages.at(-1)).not.toMatch(/<= FROM_UNIXTIME\(\?\)\) ORDER BY/);
    expect(rec.pageRows.reduce((a, b) => a + b, 0)).toBe(DUE);
    expect(rec.maxOpen()).toBeGreaterThanOrEqual(2);
    expect(rec.maxOpen()).toBeLessThanOrEqual(1 + AHEAD_PAGES);
  }, 60_000);

  it('pages cut by value follow the keys: each holds about a page at the density of the pages read out before it', async () => {
    if (engine === 'postgres') return; // its time keys are text: cut by count (above)
    const rec = recording(db);
    const got = await lines({ ...source, db: rec.db }, { ...options, readAhead: {} }, 1);
    expect(got.text).toBe(pageByPage);
    // The first half: ~3.75 rows a second, the pages cut in it hold about PAGE rows each; the
    // second: 50 rows a second, where pages cut before its density was read out (at most the
    // AHEAD_PAGES read ahead and the one streaming) hold more, the last the rest.
    const sizes = rec.pageRows.slice(1);
    const large = sizes.filter((n) => n > 2 * PAGE);
    expect(large.length).toBeGreaterThanOrEqual(1);
    expect(large.length).toBeLessThanOrEqual(1 + AHEAD_PAGES);
    expect(sizes.indexOf(large[0]!)).toBeGreaterThan(((DUE / 2) * 0.8) / PAGE);
    for (const n of sizes.slice(0, sizes.indexOf(large[0]!) - 1)) {
      expect(n).toBeGreaterThanOrEqual(PAGE / 2);
      expect(n).toBeLessThanOrEqual(2 * PAGE);
    }
    expect(rec.pages.length).toBeLessThan((2 * DUE) / PAGE);
  }, 60_000);

  it('a page read ahead that fills its memory waits paused and still gives every line once, in order', async () => {
    const rec = recording(db);
    const got = await lines(
      { ...source, db: rec.db },
      { ...options, pageSize: 100_000, readAhead: { pageRows: 500, bytes: 1, cut: 'count' } },
      20,
    );
    expect(got.text).toBe(pageByPage);
    // The first page alone, four bounded pages after it, and after the last bound the (empty) rest.
    expect(rec.pages.length).toBe(DUE / 500 + 1);
    // Each page read ahead stays open, paused, until it streams out: with a reader slow enough for
    // them all to start, the one streaming and AHEAD_PAGES more; or as many as asked for.
    expect(AHEAD_PAGES).toBe(2);
    expect(rec.maxOpen()).toBe(1 + AHEAD_PAGES);
    const one = recording(db);
    const onePage = await lines(
      { ...source, db: one.db },
      { ...options, pageSize: 100_000, readAhead: { pageRows: 500, bytes: 1, pages: 1, cut: 'count' } },
      20,
    );
    expect(onePage.text).toBe(pageByPage);
    expect(one.maxOpen()).toBe(2);
  }, 60_000);

  it(`by default ${engine === 'mysql' ? 'reads ahead (the server is the slower side of a large list)' : "reads page after page (COPY's decoding is the slower side)"}`, async () => {
    const rec = recording(db);
    const got = await lines({ ...source, db: rec.db }, options);
    expect(got.text).toBe(pageByPage);
    expect(db.engine.listReadAhead).toBe(engine === 'mysql');
    if (engine === 'mysql') expect(rec.maxOpen()).toBeGreaterThanOrEqual(2);
    else expect(rec.maxOpen()).toBe(1);
  }, 60_000);

  it('where the bounds would read table rows, the list is read page after page', async () => {
    const rec = recording(db);
    const notIndexOnly = Object.create(rec.db, {
      engine: { value: { ...db.engine, indexOnly: () => false } },
    }) as Db;
    const got = await lines({ ...source, db: notIndexOnly }, { ...options, readAhead: {} });
    expect(got.text).toBe(pageByPage);
    expect(rec.queries.filter((q) => /^SELECT .* LIMIT 1 OFFSET/.test(q.sql))).toEqual([]);
    expect(rec.maxOpen()).toBe(1);
    expect(rec.pages.length).toBe(Math.ceil(DUE / PAGE));
  }, 60_000);

  it('the engine finds the bound statement index-only (the read-ahead path is the one the list takes)', async () => {
    const rec = recording(db);
    await lines({ ...source, db: rec.db }, { ...options, readAhead: { pageRows: 1_000, bytes: 1 << 20 } });
    const explain = rec.queries.find((q) => q.sql.startsWith(db.dialect.explain));
    expect(explain).toBeDefined();
    expect(db.engine.indexOnly(await db.query(explain!.sql, explain!.params))).toBe(true);
    // And not for a statement that reads a column outside the index.
    const wide = explain!.sql.replace(' SELECT ', ' SELECT biz_id, ');
    expect(wide).not.toBe(explain!.sql);
    expect(db.engine.indexOnly(await db.query(wide, explain!.params))).toBe(false);
  }, 60_000);

  it('leaving early ends every page: the connections close and no statement of the list is left running', async () => {
    const encoder = new NdjsonWireEncoder(source.sql, 'due');
    const rec = recording(db);
    const small = { ...options, readAhead: { pageRows: 1_000, bytes: 1 } };
    let all = false;
    for await (const chunk of streamListEncoded({ ...source, db: rec.db }, 'due', small, encoder) ?? []) {
      expect(chunk.length).toBeGreaterThan(0);
      // Past the first page (read alone), the pages ahead start once their bounds are read: wait
      // for them all, then leave.
      if (rec.pages.length < 2) continue;
      for (let waited = 0; rec.openNow() < 1 + AHEAD_PAGES && waited < 5_000; waited += 10) await sleep(10);
      all = rec.openNow() === 1 + AHEAD_PAGES;
      break;
    }
    expect(all).toBe(true);
    expect(rec.openNow()).toBe(0);
    const running = await edb.rows<{ n: number }>(
      engine === 'postgres'
        ? `SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%ORDER BY%'`
        : `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE '%ORDER BY%'`,
    );
    expect(Number(running[0]?.n)).toBe(0);
  }, 60_000);
});
