import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/db/engines/sqlite/db.js';
import { BUSINESS_TABLES, TOUR_STEPS, type Sandbox } from '../../src/verbs/demo/index.js';
import { runCli, runJson } from '../support/cli.js';

// The tour tells a true story: the missing effects diff finds are enqueued, the redrive runs them
// through the sandbox's handler, which writes their business rows, and diff then finds none missing.

interface DiffJson {
  total: { missing: number; duplicate: number; orphan: number; unsettled: number };
}

const TASKS = 800;

function stepIndex(predicate: (args: string[]) => boolean): number {
  const stub = { samples: { failedId: 1, stuckId: 1, dueId: 1 } } as Sandbox;
  return TOUR_STEPS.findIndex((step) => predicate(step.args(stub)));
}

async function missingIds(cwd: string, config: string): Promise<number[]> {
  const ndjson = await runCli(['diff', '--format', 'ndjson', '--config', config], { cwd });
  expect(ndjson.code, ndjson.stderr).toBe(1);
  return ndjson.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { kind: string; taskId: number | null })
    .filter((f) => f.kind === 'missing')
    .map((f) => f.taskId as number);
}

describe('the demo tour: diff, enqueue, redrive, diff', () => {
  it('orders the story: diff, diff --enqueue, redrive, diff again, then compensate', () => {
    const firstDiff = stepIndex((a) => a[0] === 'diff' && !a.includes('--enqueue'));
    const enqueue = stepIndex((a) => a[0] === 'diff' && a.includes('--enqueue') && a.includes('--yes'));
    const redrive = stepIndex((a) => a[0] === 'redrive');
    const againDiff = TOUR_STEPS.findIndex((s, i) => i > redrive && s.command === 'diff');
    const compensate = stepIndex((a) => a[0] === 'compensate');
    expect(firstDiff).toBeGreaterThanOrEqual(0);
    expect([firstDiff, enqueue, redrive, againDiff, compensate]).toEqual([
      firstDiff,
      firstDiff + 1,
      firstDiff + 2,
      firstDiff + 3,
      firstDiff + 4,
    ]);
  });

  it("the tour's redrive writes the business row of every task it makes success, the enqueued ones included", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-demo-redrive-'));
    const built = await runJson<{ file: string; configFile: string; tasks: number; businessRows: number }>(
      ['demo', '--tasks', String(TASKS), '--no-tour'],
      { cwd },
    );
    expect(built.code, built.stderr).toBe(0);
    const config = 'taskrecon-demo.config.yaml';
    // The handler is a command shipped with the package, named by absolute paths.
    expect(readFileSync(join(cwd, config), 'utf8')).toMatch(
      /type: command, argv: \["\/.*effect-handler\.js"/,
    );
    const sandbox: Sandbox = { ...built.json, samples: { failedId: null, stuckId: null, dueId: null } };

    const missingBefore = await missingIds(cwd, config);
    expect(missingBefore.length).toBeGreaterThan(0);

    const db = openSqlite({ kind: 'sqlite', file: built.json.file });
    try {
      const enqueue = TOUR_STEPS.findIndex((s) => s.args(sandbox).includes('--enqueue'));
      const redrive = TOUR_STEPS.findIndex((s) => s.command === 'redrive');
      let openBefore: number[] = [];
      for (const step of TOUR_STEPS.slice(enqueue, redrive + 1)) {
        if (step.command === 'redrive')
          openBefore = (
            await db.query<{ id: number }>('SELECT id FROM async_task WHERE status IN (0, 1) ORDER BY id')
          ).map((r) => r.id);
        const run = await runCli([...step.args(sandbox), '--config', config], { cwd, timeoutMs: 170_000 });
        expect(step.okExits ?? [0], `${step.title}: ${run.stderr}`).toContain(run.code);
      }
      // The enqueued tasks were among those the redrive ran.
      for (const id of missingBefore) expect(openBefore).toContain(id);

      const madeSuccess = await db.query<{
        id: number;
        biz_type: keyof typeof BUSINESS_TABLES;
        biz_id: string;
      }>(`SELECT id, biz_type, biz_id FROM async_task WHERE status = 2 AND id IN (${openBefore.join(', ')})`);
      expect(madeSuccess.length).toBeGreaterThan(missingBefore.length);
      const withoutRow: number[] = [];
      for (const task of madeSuccess) {
        const { table, key } = BUSINESS_TABLES[task.biz_type];
        const rows = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${key} = ?`, [
          task.biz_id,
        ]);
        if (rows[0]?.n !== 1) withoutRow.push(task.id);
      }
      expect(withoutRow).toEqual([]);
    } finally {
      await db.close();
    }

    const after = await runJson<DiffJson>(['diff', '--samples', '0', '--config', config], { cwd });
    expect(after.json.total.missing).toBe(0);
    expect(await missingIds(cwd, config)).toEqual([]);
    // What a redrive cannot fix is still shown.
    expect(after.json.total.duplicate + after.json.total.orphan + after.json.total.unsettled).toBeGreaterThan(
      0,
    );
  });

  it('a duplicate delivery to the sandbox handler adds no second row; an unknown biz type fails permanently', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-demo-handler-'));
    const built = await runJson<{ file: string }>(['demo', '--tasks', '200', '--no-tour'], { cwd });
    expect(built.code, built.stderr).toBe(0);
    const yaml = readFileSync(join(cwd, 'taskrecon-demo.config.yaml'), 'utf8');
    const argv = JSON.parse(
      /coupon: \{ type: command, argv: (\[[^\]]*\])/.exec(yaml)?.[1] ?? '[]',
    ) as string[];
    const fill = (a: string) =>
      a.replace('{bizType}', 'coupon').replace('{bizId}', 'PAY-DUP-1').replace('{eventId}', 'evt-dup-1');
    const [program, ...args] = argv.map(fill);
    const payload = JSON.stringify({
      order_id: 'PAY-DUP-1',
      user_id: 7,
      coupon_template_id: 'TPL-NEWUSER-20',
    });
    const deliver = (argv: string[], input: string) =>
      spawnSync(program as string, argv, { input, encoding: 'utf8' });
    const outcomes: string[] = [];
    for (let i = 0; i < 2; i++) {
      const run = deliver(args, payload);
      expect(run.status, run.stderr).toBe(0);
      outcomes.push(run.stdout.trim());
    }
    expect(outcomes).toEqual(['applied evt-dup-1', 'duplicate evt-dup-1']);
    // A biz type the sandbox has no table for is a permanent failure with the reason, nothing written.
    const unknown = deliver(
      [args[0] as string, args[1] as string, 'parcel', 'PAY-DUP-2', 'evt-dup-2'],
      payload,
    );
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("biz type 'parcel' has no business table");
    const db = openSqlite({ kind: 'sqlite', file: built.json.file });
    try {
      const rows = await db.query<{ n: number }>(
        "SELECT COUNT(*) AS n FROM user_coupon WHERE order_id = 'PAY-DUP-1'",
      );
      expect(rows[0]?.n).toBe(1);
    } finally {
      await db.close();
    }
  });
});
