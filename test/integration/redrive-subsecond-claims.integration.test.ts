import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { claimBatch, detectSkipLocked, type ClaimCursor, type ClaimKind } from '../../src/db/sql/claims.js';
import type { Db } from '../../src/db/types.js';
import { runCli } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

/**
 * Claim pages over next-retry times with fractions of a second: 60 due rows and 60 stuck rows,
 * each set inside one second (distinct fractions, each held by two rows, ids in an order other than
 * the times'), claimed in pages of 7 as redrive's feeder does. A claim page continues from the last
 * row's whole epoch second, so on PostgreSQL and SQLite it starts inside that second again: every
 * row it read there was claimed by that same page and is no longer claimable, so it is not read
 * again. Every row is claimed exactly once, in (next_retry_time, id) order, no page reads a row twice,
 * and the backlog ends.
 */
const ROWS = 60;
const PAGE = 7;
const SECOND = '2024-02-29 23:59:58';
const SECOND_EPOCH = Date.parse(`${SECOND.replace(' ', 'T')}Z`) / 1000;

const fraction = (i: number): number => ((i * 17) % 30) * 31_011 + 7;

function at(engine: string, i: number): string {
  const us = String(fraction(i)).padStart(6, '0');
  return engine === 'postgres' ? `${SECOND}.${us}+00` : `${SECOND}.${us}`;
}

/** The ids of one set in (next_retry_time, id) order: the set's rows were inserted as ids first..first+ROWS-1. */
function expectedIds(first: number): string[] {
  return Array.from({ length: ROWS }, (_, i) => i)
    .sort((a, b) => fraction(a) - fraction(b) || a - b)
    .map((i) => String(first + i));
}

describe.each(TEST_ENGINES)('redrive claim pages over sub-second next-retry times on %s', (engine) => {
  let edb: EngineDb;
  let db: Db;
  let source: BoundSource;
  let skipLocked: boolean;

  beforeAll(async () => {
    edb = await createEngineDb(engine, 'claim_subsec');
    const init = await runCli(['init', '--db', edb.dsn]);
    expect(init.code, init.stderr).toBe(0);
    if (engine === 'mysql') await edb.run('ALTER TABLE async_task MODIFY next_retry_time DATETIME(6) NULL');
    const columns = [
      'biz_type',
      'biz_id',
      'event_id',
      'status',
      'retry_count',
      'next_retry_time',
      'updated_at',
    ];
    // Due: pending, ids 1..60. Stuck: processing, its lease (next_retry_time) and updated_at long past, ids 61..120.
    const old = engine === 'postgres' ? `${SECOND}+00` : SECOND;
    await edb.insertRows(
      'async_task',
      columns,
      Array.from({ length: ROWS }, (_, i) => ['coupon', `due-${i}`, `due-${i}`, 0, 1, at(engine, i), old]),
    );
    await edb.insertRows(
      'async_task',
      columns,
      Array.from({ length: ROWS }, (_, i) => [
        'coupon',
        `stuck-${i}`,
        `stuck-${i}`,
        1,
        1,
        at(engine, i),
        old,
      ]),
    );
    db = await connect(edb.dsn);
    source = await bindSource(db, asyncTask, 'claim_subsec');
    skipLocked = await detectSkipLocked(source);
  }, 120_000);

  afterAll(async () => {
    await db?.close();
    await edb?.drop();
  });

  it('the fractions are stored: each set shares one second, out of id order', async () => {
    const rows = await edb.rows<{ status: number; n: number; d: number }>(
      'SELECT status, COUNT(*) AS n, COUNT(DISTINCT next_retry_time) AS d FROM async_task GROUP BY status ORDER BY status',
    );
    expect(rows.map((r) => [Number(r.status), Number(r.n), Number(r.d)])).toEqual([
      [0, ROWS, 30],
      [1, ROWS, 30],
    ]);
    expect(expectedIds(1)).not.toEqual(Array.from({ length: ROWS }, (_, i) => String(i + 1)));
  });

  it.each([
    ['due', 1],
    ['stuck', ROWS + 1],
  ] as Array<[ClaimKind, number]>)(
    'claims every %s row once, in order, reading none twice',
    async (kind, first) => {
      const nowEpoch = await db.nowEpoch();
      const claimed: string[] = [];
      const cursors: Array<ClaimCursor | undefined> = [];
      let cursor: ClaimCursor | undefined;
      let scanned = 0;
      for (let pages = 0; pages < (ROWS / PAGE) * 3; pages++) {
        const batch = await claimBatch(source, {
          kind,
          limit: PAGE,
          cutoffEpoch: nowEpoch,
          stuckCutoffEpoch: nowEpoch - 600,
          leaseSeconds: 600,
          cursor,
          skipLocked,
        });
        claimed.push(...batch.tasks.map((t) => String(t.id)));
        scanned += batch.scanned;
        cursor = batch.cursor;
        cursors.push(cursor);
        if (batch.scanned < PAGE) break;
      }
      expect(claimed).toEqual(expectedIds(first));
      // Read once each: a page that read a row of the second again would count it here.
      expect(scanned).toBe(ROWS);
      // 60 rows in pages of 7: 8 full pages and a short one.
      expect(cursors.length).toBe(Math.ceil(ROWS / PAGE));
      // On PostgreSQL and SQLite the continuation really starts inside the shared second: the
      // cursor holds its whole second (MySQL's UNIX_TIMESTAMP keeps DATETIME(6)'s fraction).
      const key = Number(cursors[0]?.nextRetryEpoch);
      if (engine === 'mysql') expect(key).toBeGreaterThan(SECOND_EPOCH);
      else expect(key).toBe(SECOND_EPOCH);
      const [left] = await edb.rows<{ n: number }>(
        `SELECT COUNT(*) AS n FROM async_task WHERE status = ? AND next_retry_time < ?`,
        [kind === 'due' ? 0 : 1, engine === 'postgres' ? `${SECOND}.999999+00` : `${SECOND}.999999`],
      );
      expect(Number(left?.n)).toBe(0);
    },
    60_000,
  );
});
