import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { assertMatchesSchema } from '../support/schemas.js';

/** The demo sandbox's think-queue failures and sweep rules, on SQLite: the sandbox is SQLite by design. */
interface SweepJson {
  retried: number;
  deferred: number;
  held: number;
  secondFailures: number;
  results: Array<{ rule: string; outcome: string; eligibleAt: string | null }>;
}

describe('the sweep in the demo sandbox', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-sweep-demo-'));
  const config = ['--config', 'taskrecon-demo.config.yaml'];

  it('dry-runs and then retries the SMS failures, holds the schema error, windows the warehouse jobs', async () => {
    expect((await runCli(['demo', '--no-tour', '--tasks', '200'], { cwd })).code).toBe(0);
    const dry = await runJson<SweepJson>(['sweep', '--dry-run', ...config], { cwd });
    expect(dry.code).toBe(0);
    assertMatchesSchema('sweep', dry.json);
    const hour = new Date().getUTCHours();
    const warehouseOpen = hour >= 9 && hour < 18;
    const count = (json: SweepJson, rule: string, outcome: string) =>
      json.results.filter((r) => r.rule === rule && r.outcome === outcome).length;
    expect(count(dry.json, 'sms', 'would-retry')).toBe(8);
    expect(count(dry.json, 'schema', 'held')).toBe(1);
    expect(count(dry.json, 'warehouse', warehouseOpen ? 'would-retry' : 'deferred')).toBe(4);
    const run = await runJson<SweepJson>(['sweep', ...config], { cwd });
    expect(run.code).toBe(0);
    expect(run.json.retried).toBe(8 + (warehouseOpen ? 4 : 0));
    const again = await runJson<SweepJson>(['sweep', ...config], { cwd });
    expect(again.json.retried).toBe(0);
    const audit = await runJson<Array<{ action: string }> | { entries: Array<{ action: string }> }>(
      ['audit', '--action', 'sweep-retry', '--limit', '0', ...config],
      { cwd },
    );
    const entries = Array.isArray(audit.json) ? audit.json : audit.json.entries;
    expect(entries.length).toBe(run.json.retried);
  });
});
