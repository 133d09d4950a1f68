import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BoundSource } from '../../src/db/bind-source.js';
import { bindSource } from '../../src/db/bind-source.js';
import { connect } from '../../src/db/connect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type { Db } from '../../src/db/types.js';
import { NdjsonWireEncoder } from '../../src/render/ndjson-wire.js';
import { rowSerializer } from '../../src/render/task-rows.js';
import {
  ALL_LISTS,
  streamListBatches,
  streamListEncoded,
  wireEncodable,
  type ScanOptions,
} from '../../src/verbs/scan/index.js';
import { runCli } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

let pgdb: PgTestDatabase;
let db: Db;

/** Text that COPY's text format escapes, or that JSON does: every control character, quotes, backslashes, tabs, non-ASCII. */
const CONTROLS = Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('') + '\u007f';
const TRICKY = [
  'plain',
  '"double" and \'single\' quotes',
  'C:\\path\\to\\new\\table \\N \\\\ \\t \\x41 \\101',
  '\\N',
  'tab\there, newline\nthere, cr\rthere, crlf\r\n, backspace\b, formfeed\f, vtab\u000b',
  `controls ${CONTROLS} end`,
  '券 积分余额不足 émoji 🎟️ 𝄞 \u2028 \u2029 zero\u200bwidth',
  '',
  ' ',
  '{"json":"body","nested":{"a":[1,2,"\\u0000"]}}',
];
/** Longer than the 1,000 characters a list shows, multi-byte: cut by characters, not bytes. */
const LONG_ERROR = `${'错误 \\ "x"\t'.repeat(200)}END`;

async function seed(table: string): Promise<number> {
  const rows: unknown[][] = [];
  // 3 lists (due, stuck, failed), tricky texts in every text column, NULL errors, times before 1970
  // and fractions of a second (cut to whole seconds), and many rows on one next_retry_time (keyset
  // ties across pages; whole seconds, as the page key holds them).
  for (let i = 0; i < 600; i++) {
    const t = TRICKY[i % TRICKY.length] as string;
    const u = TRICKY[(i * 7 + 3) % TRICKY.length] as string;
    const status = [0, 1, 3][i % 3] as number;
    const next =
      i % 50 === 0
        ? '1969-07-20 20:17:40+00'
        : i % 11 === 0
          ? '2000-01-01 00:00:00+00'
          : `2024-02-29 23:59:${String(i % 60).padStart(2, '0')}+08`;
    const error = i % 5 === 0 ? null : i % 13 === 0 ? LONG_ERROR : `${u} #${i}`;
    rows.push([
      `biz ${t}`.slice(0, 32),
      `${t} ${i}`.slice(0, 64),
      `evt-${i} ${u}`.slice(0, 64),
      status,
      i % 9,
      next,
      error,
    ]);
  }
  for (const r of rows) {
    await pgdb.sql.query(
      `INSERT INTO ${table} (biz_type, biz_id, event_id, status, retry_count, next_retry_time, last_error, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, '1969-12-31 23:59:59.5+00', '2001-09-09 01:46:40.25+00')`,
      r,
    );
  }
  return rows.length;
}

async function source(table: string): Promise<BoundSource> {
  return bindSource(db, { ...asyncTask, table }, 'copy-test');
}

async function options(pageSize: number): Promise<ScanOptions> {
  return { nowEpoch: await db.nowEpoch(), stuckAfterMs: 600_000, limit: 0, lists: ALL_LISTS, pageSize };
}

/** The NDJSON of every list through the driver's values and the row serializer (the slow path). */
async function slowPath(src: BoundSource, opts: ScanOptions): Promise<Buffer> {
  const serializer = rowSerializer(src.sql);
  let out = '';
  for (const kind of ALL_LISTS) {
    const batches = streamListBatches(src, kind, opts);
    if (batches) for await (const rows of batches) out += serializer.ndjsonBatch(kind, rows);
  }
  return Buffer.from(out);
}

/** The NDJSON of every list through COPY (the fast path), and how many rows the encoder saw. */
async function copyPath(src: BoundSource, opts: ScanOptions): Promise<{ bytes: Buffer; rows: number }> {
  const encoder = new NdjsonWireEncoder(src.sql, 'stuck', 512);
  const chunks: Buffer[] = [];
  for (const kind of ALL_LISTS) {
    encoder.setList(kind);
    const stream = streamListEncoded(src, kind, opts, encoder);
    if (stream) for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  }
  return { bytes: Buffer.concat(chunks), rows: encoder.rows };
}

/** The first line where two outputs differ, for a readable failure. */
function firstDifference(a: Buffer, b: Buffer): string | undefined {
  const la = a.toString('utf8').split('\n');
  const lb = b.toString('utf8').split('\n');
  const i = la.findIndex((line, k) => line !== lb[k]);
  return i < 0 && la.length === lb.length ? undefined : `line ${i + 1}:\n${la[i]}\n${lb[i]}`;
}

beforeAll(async () => {
  pgdb = await createPgDatabase('pg_copy');
  const init = await runCli(['init', '--db', pgdb.dsn]);
  expect(init.code, init.stderr).toBe(0);
  // A list cuts last_error at 1,000 characters: the column must be able to hold more.
  await pgdb.sql.query('ALTER TABLE async_task ALTER COLUMN last_error TYPE text');
  await seed('async_task');
  // The same rows with a numeric biz_id: its text on the wire ('12.50') is not the driver's value (12.5).
  await pgdb.sql.query(`CREATE TABLE numeric_task (LIKE async_task INCLUDING ALL)`);
  await pgdb.sql.query(`ALTER TABLE numeric_task ALTER COLUMN biz_id TYPE numeric(12,2) USING 0`);
  await pgdb.sql.query(
    `INSERT INTO numeric_task (biz_type, biz_id, event_id, status, next_retry_time)
     SELECT 'coupon', n + 0.5, 'num-' || n, 3, now() FROM generate_series(1, 40) n`,
  );
  db = await connect(pgdb.dsn, { appTimeZone: 'Asia/Tokyo' });
}, 120_000);

afterAll(async () => {
  await db?.close();
  await pgdb?.drop();
});

describe('scan --format ndjson through COPY on PostgreSQL', () => {
  it('writes every line byte for byte as the row serializer does, across pages and chunks', async () => {
    const src = await source('async_task');
    expect(wireEncodable(src)).toBe(true);
    // COPY's text of a bytea is `\x…`, not its bytes: only the lists take it, never streamEncoded's readers.
    expect(db.streamEncoded).toBeUndefined();
    expect(typeof db.streamTextEncoded).toBe('function');
    // Pages of 7 rows: many keyset pages, ties on next_retry_time inside and across pages.
    const opts = await options(7);
    const slow = await slowPath(src, opts);
    const fast = await copyPath(src, opts);
    expect(fast.rows).toBe(600);
    expect(slow.toString('utf8').split('\n').length - 1).toBe(600);
    expect(firstDifference(fast.bytes, slow)).toBeUndefined();
    expect(fast.bytes.equals(slow)).toBe(true);
    // The tricky texts really came through: escapes decoded, the long error cut at 1,000 characters.
    const lines = slow
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { bizId: string; lastError: string | null; nextRetryAt: string });
    expect(lines.some((l) => l.bizId.startsWith('C:\\path\\to\\new\\table \\N'))).toBe(true);
    expect(lines.some((l) => l.bizId.startsWith(`controls ${CONTROLS}`.slice(0, 64)))).toBe(true);
    expect(lines.some((l) => l.lastError === null)).toBe(true);
    expect(lines.some((l) => l.lastError?.length === 1000 && l.lastError.startsWith('错误 \\ "x"\t'))).toBe(
      true,
    );
    expect(lines.some((l) => l.nextRetryAt === '1969-07-20T20:17:40Z')).toBe(true);
    expect(lines.every((l) => (l as { createdAt?: string }).createdAt === '1969-12-31T23:59:59Z')).toBe(true);
  });

  it('writes the same bytes in one page per list (the default page size)', async () => {
    const src = await source('async_task');
    const opts = await options(100_000);
    const fast = await copyPath(src, opts);
    expect(firstDifference(fast.bytes, await slowPath(src, opts))).toBeUndefined();
  });

  it('the comparison fails where the wire text differs from the driver value, so such a table takes the slow path', async () => {
    const src = await source('numeric_task');
    expect(wireEncodable(src)).toBe(false);
    const opts = await options(100_000);
    const slow = await slowPath(src, opts);
    const fast = await copyPath(src, opts);
    expect(fast.rows).toBe(40);
    expect(fast.bytes.equals(slow)).toBe(false);
    expect(firstDifference(fast.bytes, slow)).toMatch(/"bizId":"1\.50".*\n.*"bizId":"1\.5"/s);
    // The command checks the column types and writes what the row serializer writes.
    const run = await runCli([
      'scan',
      '--db',
      pgdb.dsn,
      '--table',
      'numeric_task',
      '--limit',
      '0',
      '--format',
      'ndjson',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(slow.toString('utf8'));
  });

  it('the command streams the same lines as the row serializer', async () => {
    const src = await source('async_task');
    const run = await runCli(['scan', '--db', pgdb.dsn, '--limit', '0', '--format', 'ndjson']);
    expect(run.code, run.stderr).toBe(0);
    const slow = await slowPath(src, await options(100_000));
    expect(firstDifference(Buffer.from(run.stdout), slow)).toBeUndefined();
  });
});
