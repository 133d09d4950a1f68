import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type { Db } from '../../src/db/types.js';
import { NdjsonWireEncoder } from '../../src/render/ndjson-wire.js';
import { claimBatch, detectSkipLocked, type ClaimCursor } from '../../src/db/sql/claims.js';
import { rowSerializer } from '../../src/render/task-rows.js';
import { streamListBatches, streamListEncoded, type ScanOptions } from '../../src/verbs/scan/index.js';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, type EngineDb } from '../support/engine-db.js';

/**
 * A task table whose id column is text holding digits ("919", "0838", "1757"…): the table orders
 * and compares those ids as text ("0838" < "1757" < "919"), so each page of a list or of a claim
 * must start after the last id of the page before as text, and an id is printed as the text it is.
 * Bound as a number, `id > 919` compares every id as a number on MariaDB/MySQL ("1757" comes again,
 * "0838" never) and is refused on PostgreSQL; printed as a number, "0838" would read as 838, another
 * row's id. 60 failed and 60 due rows on three next-retry times (ties broken by id), read and
 * claimed in pages of 7.
 */
const ROWS = 60;
const PAGE = 7;
/** More lines than this means a page started again: stop reading, the list repeats. */
const CAP = ROWS * 3;

/** Row i's id (1..120): distinct numbers of one to four digits, some written with a leading zero. */
const idOf = (i: number): string => `${i % 5 === 0 ? '0' : ''}${(i * 919) % 2000}`;

describe.each(['mysql', 'postgres'] as const)('scan lists of a table with text ids on %s', (engine) => {
  let edb: EngineDb;
  let db: Db;
  let source: BoundSource;
  let base: ScanOptions;

  beforeAll(async () => {
    edb = await createEngineDb(engine, 'textids');
    const init = await runCli(['init', '--db', edb.dsn]);
    expect(init.code, init.stderr).toBe(0);
    if (engine === 'mysql') await edb.run('ALTER TABLE async_task MODIFY id VARCHAR(20) NOT NULL');
    else {
      await edb.run('ALTER TABLE async_task ALTER COLUMN id DROP IDENTITY');
      await edb.run('ALTER TABLE async_task ALTER COLUMN id TYPE VARCHAR(20)');
    }
    const times = ['2024-03-01 10:00:00', '2024-03-01 10:00:01', '2024-03-01 10:00:02'];
    await edb.insertRows(
      'async_task',
      ['id', 'biz_type', 'biz_id', 'event_id', 'status', 'retry_count', 'next_retry_time'],
      Array.from({ length: 2 * ROWS }, (_, i) => [
        idOf(i + 1),
        'coupon',
        `biz-${i}`,
        `evt-${i}`,
        i < ROWS ? 3 : 0,
        1,
        times[i % 3],
      ]),
    );
    db = await connect(edb.dsn);
    source = await bindSource(db, asyncTask, 'textids');
    base = {
      nowEpoch: await db.nowEpoch(),
      stuckAfterMs: 600_000,
      limit: 0,
      lists: ['failed'],
      pageSize: PAGE,
    };
  }, 120_000);

  afterAll(async () => {
    await db?.close();
    await edb?.drop();
  });

  /** The ids of the rows of one status in the order the server sorts them. */
  async function serverOrder(order: string, status = 3): Promise<string[]> {
    const rows = await edb.rows<{ id: string }>(
      `SELECT id FROM async_task WHERE status = ${status} ORDER BY ${order}`,
    );
    return rows.map((r) => String(r.id));
  }

  /** The NDJSON lines of the failed list, encoded from the wire. */
  async function wireLines(options: ScanOptions): Promise<string> {
    const encoder = new NdjsonWireEncoder(source.sql, 'failed');
    const chunks: Buffer[] = [];
    for await (const chunk of streamListEncoded(source, 'failed', options, encoder) ?? []) {
      chunks.push(Buffer.from(chunk));
      if (encoder.rows > CAP) break;
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /** The ids of NDJSON lines, as printed: each must be a JSON string. */
  const idsOf = (lines: string): unknown[] =>
    lines
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { id: unknown }).id);

  const wireIds = async (options: ScanOptions): Promise<unknown[]> => idsOf(await wireLines(options));

  it('the ids sort otherwise as text than as numbers (the data can tell the two apart)', async () => {
    const asText = await serverOrder('next_retry_time, id');
    const asNumbers = [...asText].sort((a, b) => Number(a) - Number(b));
    expect(asText).toHaveLength(ROWS);
    expect(new Set(asText).size).toBe(ROWS);
    expect(asText).not.toEqual(asNumbers);
  });

  it('the batch path lists every row once, in the table order of its text ids', async () => {
    const ids: string[] = [];
    for await (const batch of streamListBatches(source, 'failed', base) ?? []) {
      ids.push(...batch.map((row) => String(row[0])));
      if (ids.length > CAP) break;
    }
    expect(ids).toEqual(await serverOrder('next_retry_time, id'));
  });

  it('the wire path, page after page, lists every row once in list order, each id the text it is', async () => {
    const lines = await wireLines({ ...base, readAhead: false });
    const ids = idsOf(lines);
    expect(ids).toEqual(await serverOrder('next_retry_time, id'));
    expect(ids).toContain(idOf(5)); // 0595
    // The same bytes as the row serializer writes from the batch path.
    const serializer = rowSerializer(source.sql);
    let slow = '';
    for await (const batch of streamListBatches(source, 'failed', base) ?? [])
      slow += serializer.ndjsonBatch('failed', batch);
    expect(lines).toBe(slow);
  });

  it('the wire path in id order, page after page and read ahead, lists every row once in the order of the text', async () => {
    const expected = await serverOrder('id');
    expect(await wireIds({ ...base, order: 'id', readAhead: false })).toEqual(expected);
    const ahead = { pageRows: PAGE, firstRows: PAGE, pages: 2 };
    expect(await wireIds({ ...base, order: 'id', readAhead: ahead })).toEqual(expected);
  });

  it('redrive claims every due row once, in (next_retry_time, id) order, in pages of 7', async () => {
    const due = await serverOrder('next_retry_time, id', 0);
    const nowEpoch = await db.nowEpoch();
    const skipLocked = await detectSkipLocked(source);
    const claim = (cursor: ClaimCursor | undefined) =>
      claimBatch(source, {
        kind: 'due',
        limit: PAGE,
        cutoffEpoch: nowEpoch,
        stuckCutoffEpoch: nowEpoch - 600,
        leaseSeconds: 600,
        cursor,
        skipLocked,
      });
    const claimed: unknown[] = [];
    let cursor: ClaimCursor | undefined;
    for (let pages = 0; pages < (ROWS / PAGE) * 3; pages++) {
      const batch = await claim(cursor);
      claimed.push(...batch.tasks.map((t) => t.id));
      cursor = batch.cursor;
      if (batch.scanned < PAGE) break;
    }
    expect(claimed).toEqual(due);
    expect(due).toHaveLength(ROWS);
    // Each claimed once: a claim from the start finds none left due.
    expect((await claim(undefined)).tasks).toEqual([]);
  });

  it('show and scan --json name a task by the text of its id', async () => {
    const shown = await runJson<{ task: { id: unknown } }>(['show', idOf(5), '--db', edb.dsn]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.json.task.id).toBe('0595');
    const scanned = await runJson<{ failed: Array<{ id: unknown }> }>([
      'scan',
      '--db',
      edb.dsn,
      '--status',
      'failed',
      '--limit',
      '0',
    ]);
    expect(scanned.code, scanned.stderr).toBe(0);
    expect(scanned.json.failed.map((t) => t.id)).toEqual(await serverOrder('next_retry_time, id'));
  });
});
