import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * A retry looks up each task's effect with the diff rules covering its biz type first: present and
 * duplicated are refused unless --force-effect, missing and no-rule retry; every refusal and force
 * is audited. The same on every engine.
 */
interface Item {
  id: number | string;
  outcome: string;
  reason?: string;
  effect?: { state: string; rules: Array<{ rule: string; rows: number; value: string | null }> };
}
interface Result {
  applied: number;
  refused: number;
  results: Item[];
  effect?: {
    present: number;
    duplicated: number;
    missing: number;
    noRule: number;
    refused: number;
    forced: number;
    refusedIds: Array<number | string>;
  };
}

describe.each(TEST_ENGINES)('retry checks the effect first (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;
  const ids: Record<string, number> = {};
  const status = async (id: number) =>
    Number((await db.rows<{ s: unknown }>('SELECT status AS s FROM async_task WHERE id = ?', [id]))[0]?.s);
  const audits = (action: string) =>
    db.rows<{ task_id: string; reason: string | null; after_json: string | null }>(
      'SELECT task_id, reason, after_json FROM taskrecon_audit WHERE action = ? ORDER BY id',
      [action],
    );

  beforeAll(async () => {
    db = await createEngineDb(engine, 'effect_retry');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-effect-'));
    // The points rule's business table lives in another database (business.db): a SQLite file.
    const pointsFile = join(cwd, 'points.sqlite');
    const points = new Database(pointsFile);
    points.exec(
      "CREATE TABLE user_points (order_id TEXT NOT NULL); INSERT INTO user_points VALUES ('o-pts');",
    );
    points.close();
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}
sources:
  tasks: { profile: async-task, default: true }
rules:
  - { name: coupon-issued, bizType: coupon, business: { table: user_coupon, key: order_id, where: "kind = 'issued'" } }
  - { name: points-granted, bizType: points, business: { table: user_points, key: order_id, db: "sqlite:${pointsFile}" } }
`,
    );
    expect((await runCli(['init'], { cwd })).code).toBe(0);
    await db.run('CREATE TABLE user_coupon (order_id VARCHAR(64) NOT NULL, kind VARCHAR(16) NOT NULL)');
    await db.run('CREATE INDEX user_coupon_order ON user_coupon (order_id)');
    const seed: Array<[string, string, number]> = [
      ['coupon', 'o-present', 3],
      ['coupon', 'o-missing', 3],
      ['coupon', 'o-dup', 3],
      ['sms', 'o-sms', 3],
      ['coupon', 'o-void', 3],
      ['coupon', 'o-done', 2],
      ['points', 'o-pts', 3],
    ];
    for (const [bizType, bizId, s] of seed) {
      await db.run(
        `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, last_error) VALUES (?, ?, ?, '{}', ?, 7, 'HTTP 500')`,
        [bizType, bizId, `ev-${bizId}`, s],
      );
      ids[bizId] = Number(
        (await db.rows<{ id: unknown }>('SELECT id FROM async_task WHERE biz_id = ?', [bizId]))[0]?.id,
      );
    }
    await db.insertRows(
      'user_coupon',
      ['order_id', 'kind'],
      [
        ['o-present', 'issued'],
        ['o-dup', 'issued'],
        ['o-dup', 'issued'],
        ['o-void', 'void'],
        ['o-done', 'issued'],
      ],
    );
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('shows each task’s effect in a dry run and writes nothing', async () => {
    const { code, json } = await runJson<Result>(
      ['compensate', '--action', 'retry', '--status', 'failed', '--dry-run'],
      { cwd },
    );
    expect(code).toBe(1);
    assertMatchesSchema('compensate', json);
    const state = (bizId: string) => json.results.find((r) => Number(r.id) === ids[bizId])?.effect?.state;
    expect(state('o-present')).toBe('present');
    expect(state('o-missing')).toBe('missing');
    expect(state('o-dup')).toBe('duplicated');
    expect(state('o-sms')).toBe('no-rule');
    // The rule's `where` applies: a void coupon is no effect.
    expect(state('o-void')).toBe('missing');
    // A rule whose business table is in another database.
    expect(state('o-pts')).toBe('present');
    expect(json.effect).toMatchObject({
      present: 2,
      duplicated: 1,
      missing: 2,
      noRule: 1,
      refused: 3,
      forced: 0,
    });
    expect(await db.rows('SELECT COUNT(*) AS n FROM taskrecon_audit')).toEqual([{ n: 0 }]);
  });

  it('refuses named tasks whose effect is there: nothing changes, exit 3, the refusal audited', async () => {
    const run = await runJson<Result>(
      ['compensate', String(ids['o-present']), String(ids['o-missing']), '--action', 'retry', '--yes'],
      { cwd },
    );
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/effect is already there.*--force-effect/);
    const present = run.json.results.find((r) => Number(r.id) === ids['o-present']);
    expect(present).toMatchObject({ outcome: 'refused', effect: { state: 'present' } });
    expect(present?.reason).toMatch(
      /1 row in user_coupon where order_id = 'o-present' \(rule coupon-issued\)/,
    );
    expect(await status(ids['o-missing'] as number)).toBe(3);
    expect(await audits('retry')).toEqual([]);
    expect((await audits('effect-refused')).map((a) => Number(a.task_id))).toEqual([ids['o-present']]);
  });

  it('bulk retries skip present and duplicated effects and list them; missing and no-rule retry', async () => {
    const text = await runCli(
      ['compensate', '--action', 'retry', '--status', 'failed', '--reason', 'partner back', '--yes'],
      { cwd },
    );
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(
      new RegExp(
        `not retried, effect already there \\(3, each audited as effect-refused\\): ${ids['o-present']}, ${ids['o-dup']}, ${ids['o-pts']}`,
      ),
    );
    for (const bizId of ['o-missing', 'o-sms', 'o-void']) expect(await status(ids[bizId] as number)).toBe(0);
    for (const bizId of ['o-present', 'o-dup', 'o-pts']) expect(await status(ids[bizId] as number)).toBe(3);
    expect((await audits('retry')).map((a) => Number(a.task_id)).sort()).toEqual(
      [ids['o-missing'], ids['o-sms'], ids['o-void']].sort(),
    );
    const refused = await audits('effect-refused');
    expect(refused.slice(1).map((a) => Number(a.task_id))).toEqual([
      ids['o-present'],
      ids['o-dup'],
      ids['o-pts'],
    ]);
    expect(JSON.parse(refused[2]?.after_json ?? '{}')).toMatchObject({ effect: { state: 'duplicated' } });
    // The same selection again in JSON: the three are listed, nothing else is left to retry.
    const again = await runJson<Result>(['compensate', '--action', 'retry', '--status', 'failed', '--yes'], {
      cwd,
    });
    expect(again.json.applied).toBe(0);
    expect(again.json.effect?.refusedIds.map(Number)).toEqual([ids['o-present'], ids['o-dup'], ids['o-pts']]);
  });

  it('--force-effect retries past a present effect, audited as forced; only with retry', async () => {
    const wrong = await runCli(
      ['compensate', String(ids['o-present']), '--action', 'mark-compensated', '--force-effect', '--yes'],
      { cwd },
    );
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/--force-effect goes with --action retry/);
    const run = await runJson<Result>(
      [
        'compensate',
        String(ids['o-present']),
        '--action',
        'retry',
        '--force-effect',
        '--reason',
        'checked: coupon revoked',
        '--yes',
      ],
      { cwd },
    );
    expect(run.code).toBe(0);
    expect(run.json.applied).toBe(1);
    expect(run.json.effect).toMatchObject({ forced: 1, refused: 0 });
    expect(await status(ids['o-present'] as number)).toBe(0);
    const forced = await audits('effect-forced');
    expect(forced.map((a) => Number(a.task_id))).toEqual([ids['o-present']]);
    expect(forced[0]?.reason).toMatch(/checked: coupon revoked/);
  });
});
