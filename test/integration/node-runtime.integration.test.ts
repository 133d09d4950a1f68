import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

const YOUNG_GENERATION = new URL('../../dist/core/young-generation.js', import.meta.url).href;

/**
 * The size of V8's young generation (new space, both halves, bytes) once 400,000 objects are made
 * and kept, in a Node process of its own (the setting is process-wide), with
 * holdYoungGeneration() called first or not.
 */
function youngGenerationAfter(hold: boolean): number {
  const script = `
    import { getHeapSpaceStatistics } from 'node:v8';
    if (${hold}) (await import(${JSON.stringify(YOUNG_GENERATION)})).holdYoungGeneration();
    const size = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
    const kept = [];
    for (let i = 0; i < 400000; i++) kept.push({ i, s: 'row ' + i });
    process.stdout.write(JSON.stringify({ after: size(), kept: kept.length }));
  `;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(child.status, child.stderr).toBe(0);
  return (JSON.parse(child.stdout) as { after: number }).after;
}

// The Node.js a run really uses: the CLI runs on the runner's own Node, and when CI asks for a
// version (TASKRECON_EXPECT_NODE, set by .ci/node-versions) that is the one running, native
// modules included. The version is in the test's name, so the runner's report says it.
const expected = process.env.TASKRECON_EXPECT_NODE;

describe(`the CLI on Node ${process.version}`, () => {
  it('runs on the same Node as the runner', async () => {
    const result = await runCli(['--version']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`node-${process.version}`);
    process.stderr.write(`taskrecon --version: ${result.stdout.trim()}\n`);
  });

  if (expected !== undefined) {
    it(`is the Node CI asked for (v${expected})`, () => {
      expect(process.version).toBe(`v${expected}`);
    });
  }

  it("loads better-sqlite3 built for this Node's ABI", () => {
    const db = new Database(':memory:');
    const row = db.prepare('SELECT 1 + 1 AS two').get() as { two: number };
    db.close();
    expect(row.two).toBe(2);
    expect(process.versions.modules).toMatch(/^\d+$/);
  });

  it("holds V8's young generation at its size when asked, while the process runs", () => {
    // Unheld, keeping 400,000 objects grows it to 16 MB a half or more; held, it stays within a
    // few MB (V8 still rounds a growth up to a whole page or two).
    expect(youngGenerationAfter(false)).toBeGreaterThanOrEqual(16 * 2 ** 20);
    expect(youngGenerationAfter(true)).toBeLessThanOrEqual(8 * 2 ** 20);
  });
});
