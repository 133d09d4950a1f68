import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

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
});
