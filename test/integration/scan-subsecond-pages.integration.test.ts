import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type { Db } from '../../src/db/types.js';
import { NdjsonWireEncoder } from '../../src/render/ndjson-wire.js';
import { rowSerializer } from '../../src/render/task-rows.js';
import {
  ALL_LISTS,
  streamList,
  streamListBatches,
  streamListEncoded,
  type ScanOptions,
} from '../../src/verbs/scan/index.js';
import { explainStatements } from '../../src/verbs/doctor/indexes.js';
import { runCli } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

/**
 * List pages over next-retry times with fractions of a second: 60 failed rows inside one second
 * (distinct fractions, some shared by two rows, ids in an order other than the times'), listed in
 * pages of 7. Each page must start strictly after the last row of the one before in
 * (next_retry_time, id) order: every row exactly once, in that order, and the list ends.
 */
const ROWS = 60;
const PAGE = 7;
/** More rows than this means a page started again inside the second: stop reading, the list repeats. */
const CAP = ROWS * 3;

/** The fraction (microseconds) of row i: 30 distinct values, each held by two rows, out of id order. */
const fraction = (i: number): number => ((i * 17) % 30) * 31_011 + 7;

/** The i-th row's next-retry time as the engine's column takes it. */
function nextRetry(engine: string, i: number): string {
  const us = String(fraction(i)).padStart(6, '0');
  return engine === 'postgres' ? `2024-02-29 23:59:58.${us}+00` : `2024-02-29 23:59:58.${us}`;
}

/** The ids in (next_retry_time, id) order: rows inserted in order get ids 1..ROWS. */
function expectedIds(): string[] {
  return Array.from({ length: ROWS }, (_, i) => i)
    .sort((a, b) => fraction(a) - fraction(b) || a - b)
    .map((i) => String(i + 1));
}

async function collect(rows: AsyncIterable<unknown[]> | undefined): Promise<string[]> {
  const ids: string[] = [];
  if (!rows) return ids;
  for await (const row of rows) {
    ids.push(String(row[0]));
    if (ids.length > CAP) break;
  }
  return ids;
}

describe.each(TEST_ENGINES)('scan list pages over sub-second next-retry times on %s', (engine) => {
  let edb: EngineDb;
  let db: Db;
  let source: BoundSource;
  let options: ScanOptions;

  beforeAll(async () => {
    edb = await createEngineDb(engine, 'subsec');
    const init = await runCli(['init', '--db', edb.dsn]);
    expect(init.code, init.stderr).toBe(0);
    // MySQL's DATETIME(6) holds the microseconds (init makes whole-second DATETIME); PostgreSQL's
    // timestamptz and SQLite's text hold them as written.
    if (engine === 'mysql') await edb.run('ALTER TABLE async_task MODIFY next_retry_time DATETIME(6) NULL');
    const rows = Array.from({ length: ROWS }, (_, i) => [
      'coupon',
      `biz-${i}`,
      `evt-${i}`,
      3,
      1,
      nextRetry(engine, i),
    ]);
    await edb.insertRows(
      'async_task',
      ['biz_type', 'biz_id', 'event_id', 'status', 'retry_count', 'next_retry_time'],
      rows,
    );
    if (engine === 'postgres') {
      // Enough other rows that the planner reads the failed rows through the index, not the table.
      await edb.run(
        `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time)
         SELECT 'other', 'b' || n, 'other-' || n, 0, now() + n * interval '1 second' FROM generate_series(1, 20000) n`,
      );
      await edb.run('ANALYZE async_task');
    }
    db = await connect(edb.dsn);
    source = await bindSource(db, asyncTask, 'subsec');
    options = {
      nowEpoch: await db.nowEpoch(),
      stuckAfterMs: 600_000,
      limit: 0,
      lists: ALL_LISTS,
      pageSize: PAGE,
    };
  }, 120_000);

  afterAll(async () => {
    await db?.close();
    await edb?.drop();
  });

  it('the fractions are stored: the second really holds more rows than a page, out of id order', async () => {
    const [row] = await edb.rows<{ n: number; d: number }>(
      `SELECT COUNT(*) AS n, COUNT(DISTINCT next_retry_time) AS d FROM async_task WHERE status = 3`,
    );
    expect(row).toEqual({ n: ROWS, d: 30 });
    expect(expectedIds()).not.toEqual(Array.from({ length: ROWS }, (_, i) => String(i + 1)));
  });

  it('--json (row by row) lists every row once, in (next_retry_time, id) order', async () => {
    const ids = await collect(streamList(source, 'failed', options));
    expect(ids).toEqual(expectedIds());
  }, 60_000);

  it('the batch path (ndjson/csv) lists every row once, in order', async () => {
    const ids: string[] = [];
    for await (const batch of streamListBatches(source, 'failed', options) ?? []) {
      ids.push(...batch.map((row) => String(row[0])));
      if (ids.length > CAP) break;
    }
    expect(ids).toEqual(expectedIds());
  }, 60_000);

  it.skipIf(engine === 'sqlite')(
    'the wire path (COPY / MySQL wire) lists every row once, in order',
    async () => {
      const encoder = new NdjsonWireEncoder(source.sql, 'failed');
      const chunks: Buffer[] = [];
      for await (const chunk of streamListEncoded(source, 'failed', options, encoder) ?? []) {
        chunks.push(Buffer.from(chunk));
        if (encoder.rows > CAP) break;
      }
      const lines = Buffer.concat(chunks).toString('utf8').trim().split('\n');
      const ids = lines.map((line) => String((JSON.parse(line) as { id: number }).id));
      expect(ids).toEqual(expectedIds());
      // The lines are the row serializer's (the page key is not printed).
      const serializer = rowSerializer(source.sql);
      let slow = '';
      for await (const batch of streamListBatches(source, 'failed', options) ?? []) {
        slow += serializer.ndjsonBatch('failed', batch);
        if (slow.length > CAP * 1000) break;
      }
      expect(`${lines.join('\n')}\n`).toBe(slow);
    },
    60_000,
  );

  it.runIf(engine === 'postgres')(
    'the pages after the first still read the (status, next_retry_time, id) index in its order: no sort',
    async () => {
      // The statements of a real run of the list, recorded on their way to the server.
      const statements: Array<{ name: string; sql: string; params: unknown[] }> = [];
      const record = (sql: string, params: readonly unknown[] = []): void => {
        if (params.length > 1) statements.push({ name: 'failed page', sql, params: [...params] });
      };
      const recorder = Object.create(db, {
        streamBatches: {
          value: (sql: string, params: readonly unknown[], o: { rowsAsArray?: boolean }) => {
            record(sql, params);
            return db.streamBatches?.(sql, params, o);
          },
        },
        stream: {
          value: (sql: string, params: readonly unknown[], o: { rowsAsArray?: boolean }) => {
            record(sql, params);
            return db.stream(sql, params, o);
          },
        },
      }) as Db;
      expect(await collect(streamList({ ...source, db: recorder }, 'failed', options))).toEqual(
        expectedIds(),
      );
      // 60 rows in pages of 7: 8 pages after the first (the last one short).
      expect(statements.length).toBe(8);
      for (const s of statements) {
        const [explained] = await explainStatements(db, [s]);
        // The plan's JSON comes as text inside the row: unescape its quotes before looking for a sort.
        const plan = JSON.stringify(explained?.plan).replace(/\\"/g, '"');
        expect(explained?.indexes, plan).toEqual(['idx_async_task_status_next_retry']);
        expect(explained?.fullScan, plan).toBe(false);
        expect(plan).not.toMatch(/"Node Type":\s*"(Incremental )?Sort"/);
        expect(plan).toMatch(/"Node Type":\s*"Index (Only )?Scan"/);
      }
    },
    60_000,
  );

  it('scan --format ndjson from the command line finishes with every row once', async () => {
    const out = await runCli(
      ['scan', '--db', edb.dsn, '--status', 'failed', '--limit', '0', '--format', 'ndjson'],
      { timeoutMs: 60_000 },
    );
    expect(out.code, out.stderr).toBe(0);
    const ids = out.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { list: string; id: number })
      .filter((l) => l.list === 'failed')
      .map((l) => String(l.id));
    expect(ids).toEqual(expectedIds());
  }, 90_000);
});
