import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { claimBatch, type ClaimCursor } from '../../src/db/sql/claims.js';
import type { Db, ExecResult, Queryable } from '../../src/db/types.js';
import { runCli } from '../support/cli.js';
import { createEngineDb, type EngineDb } from '../support/engine-db.js';

/**
 * Claims that do not rely on the SELECT's lock. TiDB accepts `FOR UPDATE SKIP LOCKED` without
 * locking what it reads, so concurrent workers read the same candidates; here the real MariaDB
 * plays that server: the claim's candidate SELECT carries no lock clause at all, and each worker
 * pauses after it, so that their reads overlap. The guarded UPDATE must still give every row to
 * exactly one worker. A naive claimer (the same read, then an UPDATE by id with no guard) on the
 * same interleaving claims rows twice: the check can fail.
 */

const ROWS = 240;
const PAGE = 20;
const WORKERS = 4;
const PAUSE_MS = 40;

let edb: EngineDb;
let db: Db;
let source: BoundSource;

beforeAll(async () => {
  edb = await createEngineDb('mysql', 'claim_unlocked');
  const init = await runCli(['init', '--db', edb.dsn]);
  expect(init.code, init.stderr).toBe(0);
  db = await connect(edb.dsn);
  source = await bindSource(db, asyncTask, 'claim_unlocked');
}, 120_000);

afterAll(async () => {
  await db?.close();
  await edb?.drop();
});

beforeEach(async () => {
  await edb.run('DELETE FROM async_task');
  await edb.insertRows(
    'async_task',
    ['biz_type', 'biz_id', 'event_id', 'status', 'retry_count', 'next_retry_time'],
    Array.from({ length: ROWS }, (_, i) => ['coupon', `b-${i}`, `e-${i}`, 0, 0, '2024-01-01 00:00:00']),
  );
});

interface Seen {
  races: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A transaction whose candidate read pauses afterwards, and whose short UPDATEs are counted. */
function pausing(tx: Queryable, seen: Seen): Queryable {
  let read = 0;
  return {
    async query<T>(sql: string, params?: readonly unknown[]): Promise<T[]> {
      const rows = await tx.query<T>(sql, params);
      if (/ORDER BY/i.test(sql)) {
        read = rows.length;
        await sleep(PAUSE_MS);
      }
      return rows;
    },
    async execute(sql: string, params?: readonly unknown[]): Promise<ExecResult> {
      const result = await tx.execute(sql, params);
      if (/^UPDATE/i.test(sql) && result.affectedRows < read) seen.races++;
      return result;
    },
  };
}

/** The source as TiDB serves it: the candidate SELECT takes no lock (and no SKIP LOCKED). */
function unlockedRead(seen: Seen): BoundSource {
  const unlocked = Object.create(db) as Db;
  Object.defineProperty(unlocked, 'dialect', { value: { ...db.dialect, forUpdate: '' } });
  Object.defineProperty(unlocked, 'transaction', {
    value: <T>(fn: (tx: Queryable) => Promise<T>) => db.transaction((tx) => fn(pausing(tx, seen))),
  });
  return { ...source, db: unlocked };
}

async function worker(
  claim: (
    cursor: ClaimCursor | undefined,
  ) => Promise<{ ids: string[]; scanned: number; cursor?: ClaimCursor }>,
) {
  const ids: string[] = [];
  let cursor: ClaimCursor | undefined;
  for (let pages = 0; pages < ROWS; pages++) {
    const page = await claim(cursor);
    ids.push(...page.ids);
    cursor = page.cursor;
    if (page.scanned < PAGE) break;
  }
  return ids;
}

describe('claims on a server whose SELECT … FOR UPDATE does not lock', () => {
  it(`${WORKERS} workers over ${ROWS} due rows: each row claimed exactly once, races lost and claimed again`, async () => {
    const seen: Seen = { races: 0 };
    const tidb = unlockedRead(seen);
    const nowEpoch = await db.nowEpoch();
    const claimed = await Promise.all(
      Array.from({ length: WORKERS }, () =>
        worker(async (cursor) => {
          const batch = await claimBatch(tidb, {
            kind: 'due',
            limit: PAGE,
            cutoffEpoch: nowEpoch,
            stuckCutoffEpoch: nowEpoch - 600,
            leaseSeconds: 600,
            cursor,
            skipLocked: true,
          });
          return { ids: batch.tasks.map((t) => String(t.id)), scanned: batch.scanned, cursor: batch.cursor };
        }),
      ),
    );
    const all = claimed.flat();
    expect(all.length).toBe(ROWS);
    expect(new Set(all).size).toBe(ROWS);
    // The reads overlapped: some UPDATE found rows another worker had claimed (and was rolled back).
    expect(seen.races).toBeGreaterThan(0);
    const [left] = await edb.rows<{ n: number }>('SELECT COUNT(*) AS n FROM async_task WHERE status = 0');
    expect(Number(left?.n)).toBe(0);
  });

  it('the same interleaving without the guard claims rows twice', async () => {
    const claimedBy = new Map<string, number>();
    await Promise.all(
      Array.from({ length: WORKERS }, (_, w) =>
        worker(async () => {
          const ids = await db.transaction(async (tx) => {
            const rows = await tx.query<{ id: unknown }>(
              `SELECT id FROM async_task WHERE status = 0 ORDER BY next_retry_time, id LIMIT ${PAGE}`,
            );
            await sleep(PAUSE_MS);
            if (rows.length === 0) return [];
            const list = rows.map((r) => String(r.id));
            await tx.execute(
              `UPDATE async_task SET status = 1 WHERE id IN (${list.map(() => '?').join(', ')})`,
              list,
            );
            return list;
          });
          for (const id of ids) claimedBy.set(id, (claimedBy.get(id) ?? 0) + 1);
          return { ids, scanned: ids.length };
        }).then(() => w),
      ),
    );
    const twice = [...claimedBy.values()].filter((n) => n > 1).length;
    expect(twice).toBeGreaterThan(0);
  });
});
