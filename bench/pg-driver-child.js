#!/usr/bin/env node
/**
 * One side of bench/pg-drivers.js: streams STATEMENT from PostgreSQL with one driver and writes each
 * row as an NDJSON task line to stdout (with backpressure), as `scan --format ndjson` would.
 *
 *   node bench/pg-driver-child.js pg|postgres DSN STATEMENT
 *
 * STATEMENT selects the task columns in this order: id, biz_type, biz_id, event_id, status,
 * retry_count, next_retry_time, last_error, created_at, updated_at (times as epoch seconds).
 */
import { once } from 'node:events';

const [driver, dsn, STATEMENT] = process.argv.slice(2);
const BATCH = 2000;
const STATUS = ['pending', 'processing', 'success', 'failed', 'cancelled'];

const iso = (epoch) => (epoch === null ? null : new Date(Number(epoch) * 1000).toISOString());

/** The NDJSON of one batch of rows (arrays in SELECT order). */
function encode(rows) {
  let out = '';
  for (const r of rows) {
    out +=
      JSON.stringify({
        id: String(r[0]),
        bizType: r[1],
        bizId: r[2],
        eventId: r[3],
        status: STATUS[r[4]] ?? String(r[4]),
        retryCount: Number(r[5]),
        nextRetryTime: iso(r[6]),
        lastError: r[7],
        createdAt: iso(r[8]),
        updatedAt: iso(r[9]),
      }) + '\n';
  }
  return out;
}

async function write(text) {
  if (!process.stdout.write(text)) await once(process.stdout, 'drain');
}

if (driver === 'pg') {
  const { default: pg } = await import('pg');
  const { default: Cursor } = await import('pg-cursor');
  const client = new pg.Client({ connectionString: dsn });
  await client.connect();
  const cursor = client.query(new Cursor(STATEMENT, [], { rowMode: 'array' }));
  for (;;) {
    const rows = await cursor.read(BATCH);
    if (rows.length === 0) break;
    await write(encode(rows));
  }
  await cursor.close();
  await client.end();
} else if (driver === 'postgres') {
  const { default: postgres } = await import('postgres');
  const sql = postgres(dsn, { max: 1 });
  for await (const rows of sql.unsafe(STATEMENT).values().cursor(BATCH)) await write(encode(rows));
  await sql.end();
} else {
  throw new Error(`unknown driver ${driver}: pg or postgres`);
}
