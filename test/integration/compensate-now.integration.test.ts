import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

let server: Server;
let url: string;
const deliveries: Array<{ eventId: string; attempt: number }> = [];

beforeAll(async () => {
  // A loopback handler that is still down for sms (503) and fine for coupon (200).
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const task = JSON.parse(body) as { eventId: string; bizType: string; attempt: number };
      deliveries.push({ eventId: task.eventId, attempt: task.attempt });
      res.writeHead(task.bizType === 'sms' ? 503 : 200).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tasks`;
});

afterAll(() => {
  server?.close();
});

describe.each(TEST_ENGINES)('compensate --action retry --now (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;
  let bare: string;
  const rows = <T>(sql: string) => db.rows<T>(sql);

  beforeAll(async () => {
    deliveries.length = 0;
    db = await createEngineDb(engine, 'compensate_now');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-now-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nsources:\n  tasks: { profile: async-task }\nhandlers:\n  default: { type: http, url: "${url}", timeout: 5s }\n`,
    );
    bare = mkdtempSync(join(tmpdir(), 'taskrecon-now-bare-'));
    writeFileSync(join(bare, 'taskrecon.config.yaml'), `db: ${db.dsn}\n`);
    expect((await runCli(['init'], { cwd })).code).toBe(0);
    await db.run(`INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, last_error) VALUES
    ('coupon', 'o-1', 'ev-1', '{}', 3, 7, 'HTTP 500'), ('coupon', 'o-2', 'ev-2', '{}', 3, 7, 'HTTP 500'),
    ('sms', 'o-3', 'ev-3', '{}', 3, 7, 'HTTP 503'), ('coupon', 'o-4', 'ev-4', '{}', 2, 0, NULL),
    ('points', 'o-5', 'ev-5', '{}', 0, 1, NULL)`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('refuses what it cannot do before writing anything', async () => {
    for (const [args, where, message] of [
      [['--action', 'mark-compensated', '--now', '--yes'], cwd, /--now goes with --action retry/],
      [['--action', 'retry', '--now', '--dry-run'], cwd, /exclude each other/],
      [['--action', 'retry', '--now', '--yes'], bare, /needs handlers/],
    ] as const) {
      const result = await runCli(['compensate', ...args], { cwd: where });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(message);
    }
    expect(await rows('SELECT COUNT(*) AS n FROM taskrecon_audit')).toEqual([{ n: 0 }]);
    expect(deliveries).toEqual([]);
  });

  it('runs only the retried tasks at once through their handler, recording outcomes as redrive does', async () => {
    const { code, json } = await runJson<{ applied: number; dispatched: Record<string, number> }>(
      ['compensate', '--action', 'retry', '--now', '--reason', 'partner back', '--yes'],
      { cwd },
    );
    expect(code).toBe(0);
    assertMatchesSchema('compensate', json);
    expect(json.applied).toBe(3);
    expect(json.dispatched).toEqual({ claimed: 3, succeeded: 2, retried: 1, failed: 0, lostRace: 0 });
    expect(deliveries.map((d) => d.eventId).sort()).toEqual(['ev-1', 'ev-2', 'ev-3']);
    expect(deliveries.every((d) => d.attempt === 1)).toBe(true);
    const after = await rows<{ biz_id: string; status: number; retry_count: number }>(
      'SELECT biz_id, status, retry_count FROM async_task ORDER BY id',
    );
    expect(after).toEqual([
      { biz_id: 'o-1', status: 2, retry_count: 0 },
      { biz_id: 'o-2', status: 2, retry_count: 0 },
      { biz_id: 'o-3', status: 0, retry_count: 1 },
      { biz_id: 'o-4', status: 2, retry_count: 0 },
      // Due, but not retried by this run: left for redrive.
      { biz_id: 'o-5', status: 0, retry_count: 1 },
    ]);
    // The sms task is back to pending, its next retry scheduled by the policy after the failed attempt.
    expect(
      await rows(
        `SELECT ${db.countIf('next_retry_time > updated_at')} AS later FROM async_task WHERE biz_id = 'o-3'`,
      ),
    ).toEqual([{ later: 1 }]);
    expect(await rows('SELECT action, COUNT(*) AS n FROM taskrecon_audit GROUP BY action')).toEqual([
      { action: 'retry', n: 3 },
    ]);
  });
});
