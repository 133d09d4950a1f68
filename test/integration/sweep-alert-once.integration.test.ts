import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

/**
 * A second failure is alerted exactly once however many sweeps find it at the same moment: two
 * sweep processes started together over one new second failure send one message (counted at a
 * loopback webhook that answers slowly, so both sweeps are past their reads before either has
 * recorded its alert). The alert is claimed in taskrecon_alert_claim before it is sent; a claim
 * whose message no target took is released, and one left by a killed sweep is taken over once stale.
 */
interface SweepJson {
  alerted: number;
  secondFailures: number;
  results: Array<{ identity: string; outcome: string; alerted?: boolean }>;
}

/** How long the webhook takes to answer: longer than two processes' start-up skew. */
const HOOK_DELAY_MS = 2000;

let hook: Server;
const hooks: string[] = [];
/** The status the webhook answers with (500: no target took the message). */
let hookStatus = 200;

beforeAll(async () => {
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      setTimeout(() => {
        if (hookStatus === 200) hooks.push(body);
        res.statusCode = hookStatus;
        res.end(hookStatus === 200 ? '{"ok":true}' : 'down');
      }, HOOK_DELAY_MS);
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  await new Promise((resolve) => hook?.close(resolve));
});

describe.each(TEST_ENGINES)('sweep alerts a second failure once on %s', (engine) => {
  let db: EngineDb;
  let cwd: string;
  const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);
  const sweep = () => runJson<SweepJson>(['sweep', '--since', '1h', '--notify'], { cwd });
  /** Fails `bizId` again after its sweep retry: a new second failure. */
  async function failAgain(bizId: string): Promise<void> {
    await db.run(
      `UPDATE async_task SET status = 3, retry_count = 8, last_error = 'partner 500 again', updated_at = ${db.at(0)} WHERE biz_id = ?`,
      [bizId],
    );
  }
  const alertRows = async (identity: string) =>
    (await rows(`SELECT id FROM taskrecon_audit WHERE action = 'sweep-alert' AND event_id = ?`, [identity]))
      .length;

  beforeAll(async () => {
    db = await createEngineDb(engine, 'sweep_alert_once');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-sweep-alert-once-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        'sources:',
        '  tasks: { profile: async-task, table: async_task, default: true }',
        'report:',
        `  notify: [{ kind: generic, url: "http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook", timeout: 10s }]`,
        'sweeps:',
        '  - { name: coupon, match: { bizType: coupon }, action: retry, maxSweeps: 1 }',
        '',
      ].join('\n'),
    );
    expect((await runCli(['init'], { cwd })).code).toBe(0);
    const ids = ['o1', 'o2', 'o3', 'o4', 'o5', 'o6'];
    for (const bizId of ids)
      await db.run(
        `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
         VALUES ('coupon', ?, ?, '{}', 3, 8, ${db.at(0)}, 'partner 500', ${db.at(-900)}, ${db.at(-300)})`,
        [bizId, `coupon:${bizId}`],
      );
    // The first sweep retries them all; each one that fails again is a second failure.
    const first = await runJson<SweepJson>(['sweep', '--since', '1h'], { cwd });
    expect(first.code).toBe(0);
    // The audit row of the sweep and the new failures must not share a second.
    await new Promise((resolve) => setTimeout(resolve, 1100));
  });

  afterAll(async () => {
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it.each(['o1', 'o2', 'o3'])(
    'two sweeps started together over one new second failure (%s) send exactly one alert',
    async (bizId) => {
      await failAgain(bizId);
      const before = hooks.length;
      const [a, b] = await Promise.all([sweep(), sweep()]);
      expect([a.code, b.code]).toEqual([1, 1]);
      expect(hooks.length - before).toBe(1);
      expect(hooks[before]).toContain(`coupon:${bizId}`);
      expect(a.json.alerted + b.json.alerted).toBe(1);
      const flags = [a, b].map((r) => r.json.results.find((x) => x.identity === `coupon:${bizId}`)?.alerted);
      expect(flags.sort()).toEqual([false, true]);
      expect(await alertRows(`coupon:${bizId}`)).toBe(1);
      const claims = await rows<{ sent: number }>(
        'SELECT sent FROM taskrecon_alert_claim WHERE task_table = ? AND event_id = ?',
        ['async_task', `coupon:${bizId}`],
      );
      expect(claims.map((c) => Number(c.sent))).toEqual([1]);
    },
    40_000,
  );

  it('a message no target took releases its claim: the next sweep alerts the job', async () => {
    await failAgain('o4');
    hookStatus = 500;
    const before = hooks.length;
    try {
      const down = await sweep();
      expect(down.code).toBe(1);
      expect(down.json.alerted).toBe(0);
    } finally {
      hookStatus = 200;
    }
    expect(
      await rows('SELECT event_id FROM taskrecon_alert_claim WHERE event_id = ?', ['coupon:o4']),
    ).toEqual([]);
    expect(await alertRows('coupon:o4')).toBe(0);
    const up = await sweep();
    expect(up.json.alerted).toBe(1);
    expect(hooks.length - before).toBe(1);
    expect(await alertRows('coupon:o4')).toBe(1);
  }, 40_000);

  it('a claim another sweep holds right now keeps this one quiet; a stale one is taken over', async () => {
    await failAgain('o5');
    await failAgain('o6');
    const [clock] = await rows<{ now: number }>(`SELECT ${db.epoch('now')} AS now`);
    const now = Number(clock?.now);
    await db.run(
      `INSERT INTO taskrecon_alert_claim (task_table, event_id, run_id, claimed_at, sent) VALUES (?, ?, ?, ?, 0), (?, ?, ?, ?, 0)`,
      ['async_task', 'coupon:o5', 'sweep-busy', now, 'async_task', 'coupon:o6', 'sweep-killed', now - 3600],
    );
    const before = hooks.length;
    const run = await sweep();
    expect(run.json.alerted).toBe(1);
    expect(hooks.length - before).toBe(1);
    expect(hooks[before]).toContain('coupon:o6');
    expect(hooks[before]).not.toContain('coupon:o5');
    expect(await alertRows('coupon:o6')).toBe(1);
    expect(await alertRows('coupon:o5')).toBe(0);
  }, 40_000);
});
