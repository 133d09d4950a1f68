import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { asyncTaskDdl } from '../../src/db/ddl.js';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { parseDsn } from '../../src/db/dsn.js';
import { openMysql } from '../../src/db/engines/mysql/db.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type { MysqlDsn } from '../../src/db/dsn.js';
import type { Db } from '../../src/db/types.js';
import {
  ALL_LISTS,
  streamListBatches,
  streamListEncoded,
  type ScanOptions,
} from '../../src/verbs/scan/scan.js';
import { NdjsonWireEncoder } from '../../src/render/ndjson-wire.js';
import { rowSerializer } from '../../src/render/task-rows.js';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { TASK_FIELDS } from '../support/task-fields.js';

// The fast NDJSON path (rows encoded from the wire, big keyset pages) must write what the plain
// path (driver values, string serializer) writes: same rows, same order, same bytes.
let schema: TestSchema;
let db: Db;
let source: BoundSource;
let blobSource: BoundSource;
const ROWS = 1500;
const APP_ZONE = '+08:00';
let cwd: string;

const ERRORS = [
  'HTTP 503',
  'say "hi"\n\tat x()',
  '积分余额不足 🎉',
  'nul \u0000 esc \u001b',
  null,
  '\\path\\',
  '\u2028',
];

beforeAll(async () => {
  schema = await createTestSchema('scan_ndjson', { timeZone: APP_ZONE });
  for (const ddl of asyncTaskDdl(mysqlDialect)) await schema.sql.query(ddl);
  // Many rows share a next_retry_time (ties the keyset must break by id); statuses and errors vary.
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, next_retry_time, last_error, created_at, updated_at)
     SELECT ELT(1 + seq % 3, 'coupon', 'points', 'sms'), CONCAT('biz-', seq), CONCAT('evt-', seq), ELT(1 + seq % 4, 0, 1, 3, 2),
            seq % 6, NOW() - INTERVAL (seq % 37) MINUTE, ELT(1 + seq % ${ERRORS.length}, ${ERRORS.map((e) => (e === null ? 'NULL' : schema.sql.escape(e))).join(', ')}),
            NOW() - INTERVAL 2 HOUR, NOW() - INTERVAL (seq % 50) MINUTE
       FROM seq_1_to_${ROWS}`,
  );
  // A table whose last_error is binary and holds bytes that are not UTF-8.
  await schema.sql.query('CREATE TABLE odd_task LIKE async_task');
  await schema.sql.query('ALTER TABLE odd_task MODIFY last_error BLOB NULL');
  await schema.sql.query(
    `INSERT INTO odd_task (biz_type, biz_id, event_id, status, retry_count, next_retry_time, last_error)
     VALUES ('sms', 'b1', 'e1', 3, 5, NOW(), X'48ff22fe0a00e4b8'), ('sms', 'b2', 'e2', 3, 5, NOW(), NULL), ('sms', 'b3', 'e3', 3, 5, NOW(), '')`,
  );
  db = await openMysql(parseDsn(schema.dsn) as MysqlDsn, { appTimeZone: APP_ZONE });
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-ndjson-'));
  writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${schema.dsn}\nappTimeZone: "${APP_ZONE}"\n`);
  source = await bindSource(db, asyncTask, 'test');
  blobSource = await bindSource(db, { ...asyncTask, table: 'odd_task' }, 'odd');
});

afterAll(async () => {
  await db?.close();
  await schema?.drop();
});

async function viaBatches(src: BoundSource, options: ScanOptions): Promise<string> {
  const serializer = rowSerializer(src.sql);
  let out = '';
  for (const kind of ALL_LISTS) {
    const batches = streamListBatches(src, kind, options);
    if (batches) for await (const rows of batches) out += serializer.ndjsonBatch(kind, rows);
  }
  return out;
}

/** The bytes of the wire path, compared byte for byte (a UTF-8 decode would hide invalid bytes). */
async function viaWire(src: BoundSource, options: ScanOptions): Promise<Buffer> {
  const encoder = new NdjsonWireEncoder(src.sql, 'stuck', 4096);
  const chunks: Buffer[] = [];
  for (const kind of ALL_LISTS) {
    encoder.setList(kind);
    const stream = streamListEncoded(src, kind, options, encoder);
    if (stream) for await (const chunk of stream) chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

describe('scan --format ndjson from the wire', () => {
  it('writes the same bytes as the driver-value path, whatever the page size', async () => {
    const nowEpoch = await db.nowEpoch();
    const options = (pageSize: number, limit = 0): ScanOptions => ({
      nowEpoch,
      stuckAfterMs: 10 * 60_000,
      limit,
      pageSize,
    });
    const reference = await viaBatches(source, options(100_000));
    const [truth] = (await schema.sql.query(
      `SELECT SUM(status = 0 AND next_retry_time <= FROM_UNIXTIME(?)) + SUM(status = 1 AND updated_at <= FROM_UNIXTIME(?)) + SUM(status = 3) AS listed FROM async_task`,
      [nowEpoch, nowEpoch - 600],
    )) as unknown as [Array<{ listed: string }>];
    const lines = reference.trim().split('\n');
    expect(lines).toHaveLength(Number(truth[0]?.listed));
    expect(new Set(lines.map((l) => (JSON.parse(l) as { id: number }).id)).size).toBe(lines.length);
    for (const pageSize of [7, 1000, 100_000]) {
      const wire = await viaWire(source, options(pageSize));
      expect(wire.equals(Buffer.from(reference)), `page size ${pageSize}`).toBe(true);
    }
    // A limit cuts each list at the same rows on both paths.
    const limited = await viaWire(source, options(7, 25));
    expect(limited.equals(Buffer.from(await viaBatches(source, options(7, 25))))).toBe(true);
    expect(limited.toString('utf8').trim().split('\n')).toHaveLength(75);
  });

  it('decodes a binary last_error that is not UTF-8 the same way on both paths', async () => {
    const options: ScanOptions = { nowEpoch: await db.nowEpoch(), stuckAfterMs: 600_000, limit: 0 };
    const bytes = await viaWire(blobSource, options);
    expect(bytes.equals(Buffer.from(await viaBatches(blobSource, options)))).toBe(true);
    const wire = bytes.toString('utf8');
    const errors = wire
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { lastError: string | null }).lastError);
    expect(errors).toEqual(['H\ufffd"\ufffd\n\u0000\ufffd', null, '']);
  });

  it('prints through the CLI the same tasks as --json, line for line (in list order)', async () => {
    const env = { TZ: 'America/New_York' };
    const ndjson = await runCli(
      ['scan', '--limit', '0', '--format', 'ndjson', '--stuck-after', '20m', '--order', 'next-retry'],
      { cwd, env },
    );
    expect(ndjson.code, ndjson.stderr).toBe(0);
    const { json } = await runJson<Record<string, Array<Record<string, unknown>>>>(
      ['scan', '--limit', '0', '--stuck-after', '20m'],
      { cwd, env },
    );
    const fields = TASK_FIELDS;
    const expected = ALL_LISTS.flatMap((list) =>
      (json[list] ?? []).map((t) => ({ list, ...Object.fromEntries(fields.map((f) => [f, t[f]])) })),
    );
    expect(ALL_LISTS.map((list) => json[list]?.length)).toEqual([225, 375, 375]);
    expect(
      ndjson.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(expected);
    expect(ndjson.stderr).toContain(`${expected.length.toLocaleString('en-US')} rows`);
  });
});
