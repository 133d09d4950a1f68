import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { selectListIds } from '../../src/db/sql/console-list.js';
import type { Db } from '../../src/db/types.js';
import { PAGE_SIZE } from '../../src/console/filters.js';
import { explainStatements } from '../../src/verbs/doctor/indexes.js';
import { listPage } from '../../src/verbs/scan/index.js';
import { runCli } from '../support/cli.js';
import { signIn, startConsoleCli, type ConsoleProcess } from '../support/console.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

/**
 * The console's list pages (newest first) over next-retry times with fractions of a second: more
 * failed rows inside one second than two pages hold (distinct fractions, each held by two rows, ids
 * in an order other than the times'), paged through the running console by its Next links. Each
 * page must start strictly before the last row of the one before in (next_retry_time, id) order,
 * newest first: every row exactly once, in that order. A tampered Next link is refused with a 400.
 */
const ROWS = PAGE_SIZE * 2 + 30;
const PAIRS = ROWS / 2;
/** More pages than this means the list repeats: stop following Next. */
const MAX_PAGES = 10;

/** The fraction (microseconds) of row i: PAIRS distinct values, each held by two rows, out of id order. */
const fraction = (i: number): number => ((i * 17) % PAIRS) * 12_011 + 7;

function nextRetry(engine: string, i: number): string {
  const us = String(fraction(i)).padStart(6, '0');
  return engine === 'postgres' ? `2024-02-29 23:59:58.${us}+00` : `2024-02-29 23:59:58.${us}`;
}

/** The ids newest first, (next_retry_time, id) descending: rows inserted in order get ids 1..ROWS. */
function expectedIds(): string[] {
  return Array.from({ length: ROWS }, (_, i) => i)
    .sort((a, b) => fraction(b) - fraction(a) || b - a)
    .map((i) => String(i + 1));
}

/** The task ids a list page shows, and its Next link. */
function readPage(html: string): { ids: string[]; next: string | undefined } {
  const ids = [...html.matchAll(/<td class="num"><a href="\/tasks\/([^"]+)">/g)].map((m) =>
    decodeURIComponent(m[1] as string),
  );
  const next = /<a rel="next" href="([^"]+)"/.exec(html)?.[1]?.replace(/&amp;/g, '&');
  return { ids, next };
}

describe.each(TEST_ENGINES)('console list pages over sub-second next-retry times on %s', (engine) => {
  let edb: EngineDb;
  let db: Db;
  let source: BoundSource;
  let cwd: string;
  let consoleCli: ConsoleProcess;
  let cookie: string;

  const get = (path: string) => fetch(`${consoleCli.origin}${path}`, { headers: { cookie } });

  beforeAll(async () => {
    edb = await createEngineDb(engine, 'console_subsec');
    const init = await runCli(['init', '--db', edb.dsn]);
    expect(init.code, init.stderr).toBe(0);
    if (engine === 'mysql') await edb.run('ALTER TABLE async_task MODIFY next_retry_time DATETIME(6) NULL');
    await edb.insertRows(
      'async_task',
      ['biz_type', 'biz_id', 'event_id', 'status', 'retry_count', 'next_retry_time'],
      Array.from({ length: ROWS }, (_, i) => ['coupon', `biz-${i}`, `evt-${i}`, 3, 1, nextRetry(engine, i)]),
    );
    if (engine === 'postgres') {
      // Enough other rows (pending, due on both sides of that second) that the planner reads the
      // failed rows through the index, not the table.
      await edb.run(
        `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time)
         SELECT 'other', 'b' || n, 'other-' || n, 0,
                timestamptz '2024-02-29 23:59:58+00' + (n - 10000) * interval '1 second'
           FROM generate_series(1, 20000) n`,
      );
      await edb.run('ANALYZE async_task');
    }
    db = await connect(edb.dsn);
    source = await bindSource(db, asyncTask, 'console_subsec');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-console-subsec-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${edb.dsn}\n`);
    consoleCli = await startConsoleCli(['--operator', 'pager'], { cwd });
    cookie = await signIn(consoleCli.url);
  }, 120_000);

  afterAll(async () => {
    await consoleCli?.stop();
    await db?.close();
    await edb?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('the fractions are stored: one second holds more rows than two pages, out of id order', async () => {
    const [row] = await edb.rows<{ n: number; d: number }>(
      'SELECT COUNT(*) AS n, COUNT(DISTINCT next_retry_time) AS d FROM async_task WHERE status = 3',
    );
    expect(row).toEqual({ n: ROWS, d: PAIRS });
    expect(expectedIds()).not.toEqual(Array.from({ length: ROWS }, (_, i) => String(ROWS - i)));
  });

  it('following Next shows every row once, newest first, and the list ends', async () => {
    const ids: string[] = [];
    let path: string | undefined = '/tasks?list=failed';
    let pages = 0;
    while (path && pages < MAX_PAGES) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      const page = readPage(await res.text());
      ids.push(...page.ids);
      path = page.next;
      pages += 1;
    }
    expect(ids).toEqual(expectedIds());
    expect(pages).toBe(3);
  }, 60_000);

  it("a bulk action's frozen selection (every id of the list, a page at a time) holds every row once", async () => {
    const where = source.sql.statusIn(['failed']);
    const ids = await selectListIds(source, where, ROWS * 3, 7);
    expect(ids.map(String)).toEqual(expectedIds());
  }, 60_000);

  it.runIf(engine === 'postgres')(
    'a page after the first reads the (status, next_retry_time, id) index backward: no sort',
    async () => {
      const statements: Array<{ name: string; sql: string; params: unknown[] }> = [];
      const recorder = Object.create(db, {
        stream: {
          value: (sql: string, params: readonly unknown[], o: { rowsAsArray?: boolean }) => {
            if (params.length > 1) statements.push({ name: 'console page', sql, params: [...params] });
            return db.stream(sql, params, o);
          },
        },
      }) as Db;
      const paged = { ...source, db: recorder };
      const filter = { list: 'failed' as const, nowEpoch: await db.nowEpoch(), stuckAfterMs: 600_000 };
      const first = await listPage(paged, filter, undefined, PAGE_SIZE);
      const second = await listPage(paged, filter, first?.next, PAGE_SIZE);
      expect(second?.tasks.map((t) => String(t.id))).toEqual(expectedIds().slice(PAGE_SIZE, PAGE_SIZE * 2));
      expect(statements.length).toBe(1);
      for (const s of statements) {
        const [explained] = await explainStatements(db, [s]);
        const plan = JSON.stringify(explained?.plan).replace(/\\"/g, '"');
        expect(explained?.indexes, plan).toEqual(['idx_async_task_status_next_retry']);
        expect(explained?.fullScan, plan).toBe(false);
        expect(plan).not.toMatch(/"Node Type":\s*"(Incremental )?Sort"/);
        expect(plan).toMatch(/"Node Type":\s*"Index (Only )?Scan Backward"|"Scan Direction":\s*"Backward"/);
      }
    },
    60_000,
  );

  it('refuses a tampered Next link with a 400 naming it, and reads nothing for it', async () => {
    const first = readPage(await (await get('/tasks?list=failed')).text());
    const next = new URL(first.next as string, consoleCli.origin);
    const after = next.searchParams.get('after') as string;
    const [key] = JSON.parse(Buffer.from(after, 'base64url').toString('utf8')) as [unknown, unknown];
    const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const bad = [
      'not a cursor!',
      cursor({ nrt: key, id: 1 }),
      cursor([key, 'x; DROP TABLE async_task']),
      cursor([key, '99999999999999999999999']),
      cursor([key, 1.5]),
      cursor([engine === 'mysql' ? '2024-02-29 23:59:58' : 'soon', 1]),
      cursor([engine === 'postgres' ? '2024-02-30 00:00:00+00' : 'x', 1]),
      `${after}A`,
    ];
    for (const value of bad) {
      const res = await get(`/tasks?list=failed&after=${encodeURIComponent(value)}`);
      const text = await res.text();
      expect(res.status, value).toBe(400);
      expect(text, value).toMatch(/after/);
    }
    // The same link untampered is served.
    expect((await get(`/tasks?list=failed&after=${after}`)).status).toBe(200);
    const [row] = await edb.rows<{ n: number }>('SELECT COUNT(*) AS n FROM async_task WHERE status = 3');
    expect(Number(row?.n)).toBe(ROWS);
  }, 60_000);
});
