import { beforeEach, describe, expect, it } from 'vitest';
import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { driveCompensate } from '../support/compensate-pty.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * On the demo sandbox (SQLite by design), every task diff calls unsettled or duplicate is refused
 * a retry without --force-effect — by compensate, its picker and the sweep — while a failed task
 * whose effect is missing retries; bulk runs list what they skipped and every refusal is audited.
 */
interface Finding {
  kind: string;
  rule: string;
  taskId: number | null;
}
interface Item {
  id: number;
  outcome: string;
  reason?: string;
  effect?: { state: string };
}
interface Result {
  applied: number;
  refused: number;
  results: Item[];
  effect?: { refused: number; forced: number; refusedIds: number[] };
}
interface AuditJson {
  entries: Array<{ action: string; taskId: string; reason: string | null }>;
}

const ENTER = '\r';
const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-effect-demo-'));
const config = ['--config', 'taskrecon-demo.config.yaml'];

async function findings(): Promise<Finding[]> {
  const { stdout } = await runCli(['diff', '--format', 'ndjson', ...config], { cwd });
  return stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Finding);
}
const idsOf = (all: Finding[], kind: string, rule?: string) =>
  all
    .filter((f) => f.kind === kind && (!rule || f.rule === rule))
    .map((f) => Number(f.taskId))
    .sort((a, b) => a - b);
async function audited(action: string): Promise<number[]> {
  const { json } = await runJson<AuditJson>(['audit', '--action', action, '--limit', '0', ...config], {
    cwd,
  });
  return json.entries.map((e) => Number(e.taskId)).sort((a, b) => a - b);
}
async function statusOf(id: number): Promise<string> {
  const { json } = await runJson<{ task: { status: string } }>(['show', String(id), ...config], { cwd });
  return json.task.status;
}

describe('effect-aware retry on the demo sandbox', () => {
  let all: Finding[];
  let unsettled: number[];
  let duplicate: number[];

  beforeEach(async () => {
    expect((await runCli(['demo', '--no-tour'], { cwd })).code).toBe(0);
    all = await findings();
    unsettled = idsOf(all, 'unsettled');
    duplicate = idsOf(all, 'duplicate');
    expect(unsettled.length).toBeGreaterThan(5);
    expect(duplicate.length).toBeGreaterThan(5);
  });

  it('compensate refuses every unsettled and duplicate task by id, retries a missing one, --force-effect goes on', async () => {
    for (const [ids, state] of [
      [unsettled, 'present'],
      [duplicate, 'duplicated'],
    ] as const) {
      const run = await runJson<Result>(
        ['compensate', ...ids.map(String), '--action', 'retry', '--yes', ...config],
        { cwd },
      );
      expect(run.code).toBe(3);
      assertMatchesSchema('compensate', run.json);
      expect(run.json.applied).toBe(0);
      for (const item of run.json.results) {
        expect(item.outcome).toBe('refused');
        expect(item.effect?.state).toBe(state);
      }
    }
    // Every unsettled one was refused for its effect, and audited so.
    expect(await audited('effect-refused')).toEqual(unsettled);
    expect(await audited('retry')).toEqual([]);
    // A failed task with no effect retries as before.
    const missing = await runJson<Result>(
      [
        'compensate',
        '--action',
        'retry',
        '--status',
        'failed',
        '--biz-type',
        'coupon',
        '--limit',
        '1',
        '--dry-run',
        ...config,
      ],
      { cwd },
    );
    const missingId = missing.json.results.find((r) => r.effect?.state === 'missing')?.id as number;
    const one = await runJson<Result>(
      ['compensate', String(missingId), '--action', 'retry', '--yes', ...config],
      { cwd },
    );
    expect(one.code).toBe(0);
    expect(one.json.applied).toBe(1);
    expect(await statusOf(missingId)).toBe('pending');
    const forced = unsettled[0] as number;
    const force = await runJson<Result>(
      [
        'compensate',
        String(forced),
        '--action',
        'retry',
        '--force-effect',
        '--reason',
        'coupon revoked by hand',
        '--yes',
        ...config,
      ],
      { cwd },
    );
    expect(force.code).toBe(0);
    expect(force.json.effect).toMatchObject({ forced: 1 });
    expect(await audited('effect-forced')).toEqual([forced]);
  });

  it('a bulk retry skips and lists the unsettled tasks (text and JSON), retries the missing ones, audits each skip', async () => {
    const dry = await runJson<Result>(
      ['compensate', '--action', 'retry', '--status', 'failed', '--dry-run', ...config],
      { cwd },
    );
    expect(dry.json.effect?.refusedIds).toEqual(unsettled);
    const text = await runCli(
      [
        'compensate',
        '--action',
        'retry',
        '--status',
        'failed',
        '--reason',
        'partner back',
        '--yes',
        ...config,
      ],
      { cwd },
    );
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      `not retried, effect already there (${unsettled.length}, each audited as effect-refused): ${unsettled.join(', ')}`,
    );
    expect(await audited('effect-refused')).toEqual(unsettled);
    for (const id of unsettled) expect(await statusOf(id)).toBe('failed');
    // Every other failed task went back to pending: the missing effects retry.
    const left = await runJson<{ summary: { byStatus: { failed: number } } }>(['scan', ...config], { cwd });
    expect(left.json.summary.byStatus.failed).toBe(unsettled.length);
  });

  it('--now runs only the retried tasks: an unsettled coupon is not run again', async () => {
    const coupons = idsOf(all, 'unsettled', 'coupon-applied');
    const duplicatesBefore = idsOf(all, 'duplicate', 'coupon-applied');
    const run = await runJson<Result & { dispatched?: { claimed: number; succeeded: number } }>(
      [
        'compensate',
        '--action',
        'retry',
        '--status',
        'failed',
        '--biz-type',
        'coupon',
        '--now',
        '--reason',
        'coupon service is back',
        '--yes',
        ...config,
      ],
      { cwd, timeoutMs: 120_000 },
    );
    expect(run.json.effect?.refusedIds).toEqual(coupons);
    expect(run.json.dispatched?.claimed).toBe(run.json.applied);
    expect(run.json.dispatched?.succeeded).toBe(run.json.applied);
    // Not run: still failed (a run through the sandbox's handler would have made them success).
    for (const id of coupons) expect(await statusOf(id)).toBe('failed');
    const after = await findings();
    expect(idsOf(after, 'duplicate', 'coupon-applied')).toEqual(duplicatesBefore);
    expect(idsOf(after, 'unsettled', 'coupon-applied')).toEqual(coupons);
  });

  it('the picker shows each task’s effect and leaves out the unsettled ones, audited', async () => {
    const coupons = idsOf(all, 'unsettled', 'coupon-applied');
    const screen = await driveCompensate(
      cwd,
      ['--action', 'retry', '--status', 'failed', '--biz-type', 'coupon', ...config],
      [
        { expect: 'Tasks to retry', send: 'a' },
        { expect: '◉', send: ENTER },
        { expect: 'task\\(s\\) picked', send: ENTER },
        { expect: 'Reason', send: `partner back${ENTER}` },
        { expect: 'Apply retry to', send: `y${ENTER}` },
      ],
    );
    expect(screen.failedStep).toBeNull();
    expect(screen.screen).toMatch(/effect present/);
    expect(screen.screen).toMatch(/effect missing/);
    expect(screen.screen).toContain(`${coupons.length} picked task(s) have their effect already there`);
    expect(screen.code).toBe(1);
    expect(await audited('effect-refused')).toEqual(coupons);
    for (const id of coupons) expect(await statusOf(id)).toBe('failed');
    expect((await audited('retry')).length).toBeGreaterThan(0);
  });

  it('the sweep refuses the unsettled tasks its rule would retry, lists them and audits them', async () => {
    appendFileSync(
      join(cwd, 'taskrecon-demo.config.yaml'),
      '  - { name: coupon-tasks, match: { bizType: coupon }, action: retry }\n',
    );
    const coupons = idsOf(all, 'unsettled', 'coupon-applied');
    const run = await runJson<{
      effectRefused: number;
      results: Array<{ id: number; source: string; outcome: string; effect?: string }>;
    }>(['sweep', '--source', 'tasks', ...config], { cwd });
    assertMatchesSchema('sweep', run.json);
    expect(run.json.effectRefused).toBe(coupons.length);
    const refused = run.json.results.filter((r) => r.outcome === 'refused').map((r) => Number(r.id));
    expect(refused.sort((a, b) => a - b)).toEqual(coupons);
    expect(run.json.results.some((r) => r.outcome === 'retried' && r.effect === 'missing')).toBe(true);
    expect(await audited('effect-refused')).toEqual(coupons);
    const text = await runCli(['sweep', '--source', 'tasks', '--dry-run', ...config], { cwd });
    expect(text.stdout).toContain(`${coupons.length} not retried: their business effect is already there`);
    // --force-effect: the sweep retries them, each audited as forced.
    const forced = await runJson<{ retried: number; effectRefused: number }>(
      ['sweep', '--source', 'tasks', '--force-effect', ...config],
      { cwd },
    );
    expect(forced.json).toMatchObject({ retried: coupons.length, effectRefused: 0 });
    expect(await audited('effect-forced')).toEqual(coupons);
    for (const id of coupons) expect(await statusOf(id)).toBe('pending');
  });
});
