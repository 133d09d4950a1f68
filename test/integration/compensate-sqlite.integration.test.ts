import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The embedded engine: the demo sandbox, where compensate and audit run with no server at all.
let dir: string;
let file: string;
const cli = (args: string[]) =>
  runJson<Record<string, unknown>>([...args, '--config', join(dir, 'sandbox.config.yaml')], { cwd: dir });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-sqlite-compensate-'));
  file = join(dir, 'sandbox.sqlite');
  const built = await runCli(['demo', '--no-tour', '--file', file, '--tasks', '400'], { cwd: dir });
  expect(built.code, built.stderr).toBe(0);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('compensate and audit on SQLite', () => {
  it('retries failed tasks and lists their audit rows with the database time', async () => {
    const db = new Database(file, { readonly: true });
    const failed = db
      .prepare('SELECT id FROM async_task WHERE status = 3 ORDER BY id LIMIT 2')
      .all() as Array<{ id: number }>;
    db.close();
    expect(failed).toHaveLength(2);
    const ids = failed.map((f) => String(f.id));
    const { code, json } = await cli([
      'compensate',
      ...ids,
      '--action',
      'retry',
      '--reason',
      'fixed',
      '--yes',
    ]);
    expect(code).toBe(0);
    assertMatchesSchema('compensate', json);
    expect(json.applied).toBe(2);
    const check = new Database(file, { readonly: true });
    const after = check
      .prepare(
        `SELECT status, retry_count, CAST(strftime('%s', next_retry_time) AS INTEGER) - CAST(strftime('%s', 'now') AS INTEGER) AS dueIn FROM async_task WHERE id IN (?, ?)`,
      )
      .all(...failed.map((f) => f.id)) as Array<{ status: number; retry_count: number; dueIn: number }>;
    check.close();
    for (const row of after) {
      expect(row).toMatchObject({ status: 0, retry_count: 0 });
      expect(Math.abs(row.dueIn)).toBeLessThan(30);
    }
    const audit = await cli(['audit', '--task', ids[0] as string, '--since', '10m']);
    expect(audit.code).toBe(0);
    assertMatchesSchema('audit', audit.json);
    const entries = audit.json.entries as Array<{
      at: string;
      action: string;
      reason: string;
      before: { status: number };
    }>;
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'retry', reason: 'fixed', before: { status: 3 } });
    expect(Math.abs(Date.parse(entries[0]?.at ?? '') - Date.now())).toBeLessThan(120_000);
    expect((await cli(['audit', '--until', '10m'])).json.count).toBe(0);
  });
});
