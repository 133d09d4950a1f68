import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

// Hints that print a command to paste name the connection the user ran with; audit --run takes
// the short run id the audit table shows.
let schema: TestSchema;
let bare: TestSchema;
let config: string;

beforeAll(async () => {
  schema = await createTestSchema('oncall_hints');
  bare = await createTestSchema('oncall_hints_bare');
  expect((await runCli(['init', '--db', schema.dsn])).code).toBe(0);
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error) VALUES
     ('coupon', 'ORD1', 'evt-1', 3, 8, 'HTTP 503'), ('coupon', 'ORD2', 'evt-2', 3, 8, 'HTTP 503')`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-hints-'));
  config = join(dir, 'ops.yaml');
  writeFileSync(
    config,
    [`db: ${schema.dsn}`, 'sources:', '  orders: { profile: async-task }', ''].join('\n'),
  );
}, 60_000);

afterAll(async () => {
  await schema?.drop();
  await bare?.drop();
});

describe('commands to paste and short run ids', () => {
  it('compensate prints the audit command with --config and --source, and audit --run takes its short id', async () => {
    const run = await runCli(
      ['compensate', '1', '--config', config, '--source', 'orders', '--action', 'mark-compensated', '--yes'],
      { cwd: tmpdir() },
    );
    expect(run.code, run.stderr).toBe(0);
    const match = /taskrecon audit --run ([0-9a-f-]{36}) --config (\S+) --source orders/.exec(run.stdout);
    expect(match, run.stdout).not.toBeNull();
    expect(match?.[2]).toBe(config);
    const runId = match?.[1] as string;

    const table = await runCli(['audit', '--config', config], { cwd: tmpdir() });
    expect(table.stdout).toContain(runId.slice(0, 8));
    const short = await runJson<{ count: number; entries: Array<{ runId: string }> }>(
      ['audit', '--config', config, '--run', runId.slice(0, 8)],
      { cwd: tmpdir() },
    );
    expect(short.json.count).toBe(1);
    expect(short.json.entries[0]?.runId).toBe(runId);
  });

  it('a prefix no run has is refused with exit 3', async () => {
    const run = await runCli(['audit', '--config', config, '--run', 'zzzzzzzz'], { cwd: tmpdir() });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain("no audited run id starts with 'zzzzzzzz'");
  });

  it('an error hint completes its command with the --db the user gave', async () => {
    const run = await runCli(['audit', '--db', bare.dsn], { cwd: tmpdir() });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`\`taskrecon init --audit-only --db ${bare.dsn}\``);
  });
});
