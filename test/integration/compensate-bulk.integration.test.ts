import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

let db: EngineDb;
let cwd: string;

interface CompensateJson {
  matched: number;
  applied: number;
  skipped: number;
  interrupted: boolean;
  durationMs: number;
  results: Array<{ id: number; outcome: string }>;
}

async function one<T>(sql: string): Promise<T> {
  return (await db.rows<T>(sql))[0] as T;
}

/** `count` failed tasks of `bizType` (event ids `<bizType>-<n>`), a thousand rows a statement. */
async function seedFailed(count: number, bizType: string): Promise<void> {
  for (let from = 1; from <= count; from += 1000) {
    const values: string[] = [];
    for (let n = from; n < from + 1000 && n <= count; n++)
      values.push(
        `('${bizType}', '${bizType}${n}', '${bizType}-${n}', '{"n": 1}', 3, 7, ${db.at(-86_400)}, 'HTTP 500', ${db.at(-172_800)}, ${db.at(-86_400)})`,
      );
    await db.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at) VALUES ${values.join(',')}`,
    );
  }
}

describe.each(TEST_ENGINES)('bulk compensate (%s)', (engine) => {
  beforeAll(async () => {
    db = await createEngineDb(engine, 'compensate_bulk');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bulk-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${db.dsn}\n`);
    const init = await runJson(['init'], { cwd });
    expect(init.code).toBe(0);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('two concurrent retry runs over 5,000 failed tasks move each task once, with one audit row each', async () => {
    await seedFailed(5000, 'race');
    const args = ['compensate', '--action', 'retry', '--biz-type', 'race', '--yes', '--batch', '100'];
    const [a, b] = await Promise.all([
      runJson<CompensateJson>(args, { cwd }),
      runJson<CompensateJson>(args, { cwd }),
    ]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.json.applied + b.json.applied).toBe(5000);
    for (const run of [a.json, b.json])
      expect(run.results.every((r) => r.outcome === 'applied' || r.outcome === 'lost-race')).toBe(true);
    expect(
      await one(
        "SELECT COUNT(*) AS n FROM async_task WHERE biz_type = 'race' AND status = 0 AND retry_count = 0",
      ),
    ).toEqual({ n: 5000 });
    expect(await one("SELECT COUNT(*) AS n FROM taskrecon_audit WHERE action = 'retry'")).toEqual({
      n: 5000,
    });
    expect(
      await one(
        "SELECT COUNT(*) AS n FROM (SELECT task_id FROM taskrecon_audit WHERE action = 'retry' GROUP BY task_id, from_status, to_status HAVING COUNT(*) > 1) d",
      ),
    ).toEqual({ n: 0 });
  });

  it('keeps to --rate, stops at SIGINT after the batch in hand, and a second run finishes without redoing a row', async () => {
    await seedFailed(20_000, 'bulk');
    const args = [
      'compensate',
      '--action',
      'retry',
      '--biz-type',
      'bulk',
      '--rate',
      '2000/s',
      '--yes',
      '--json',
    ];
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    // Wait until rows are moving, then interrupt.
    const deadline = Date.now() + 30_000;
    while (
      Date.now() < deadline &&
      Number(
        (
          await one<{ n: number }>(
            "SELECT COUNT(*) AS n FROM async_task WHERE biz_type = 'bulk' AND status = 0",
          )
        ).n,
      ) < 2000
    ) {
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/stopping after the batch in hand/);
    const first = JSON.parse(stdout) as CompensateJson;
    expect(first.interrupted).toBe(true);
    expect(first.applied).toBeGreaterThan(0);
    expect(first.applied).toBeLessThan(20_000);
    // --rate 2000/s: never ahead of the pace by more than one batch (400 rows).
    expect(first.applied).toBeLessThanOrEqual((2000 * first.durationMs) / 1000 + 400);
    const moved = await one<{ n: number }>(
      "SELECT COUNT(*) AS n FROM async_task WHERE biz_type = 'bulk' AND status = 0",
    );
    expect(Number(moved.n)).toBe(first.applied);

    const second = await runJson<CompensateJson>(
      ['compensate', '--action', 'retry', '--biz-type', 'bulk', '--yes', '--batch', '500'],
      { cwd },
    );
    expect(second.code).toBe(0);
    expect(second.json.matched).toBe(20_000 - first.applied);
    expect(second.json.applied).toBe(20_000 - first.applied);
    expect(
      await one(
        "SELECT COUNT(*) AS n FROM taskrecon_audit WHERE action = 'retry' AND event_id LIKE 'bulk-%'",
      ),
    ).toEqual({
      n: 20_000,
    });
    expect(
      await one(
        'SELECT COUNT(*) AS n FROM (SELECT task_id FROM taskrecon_audit GROUP BY task_id, action HAVING COUNT(*) > 1) d',
      ),
    ).toEqual({ n: 0 });
  });
});
