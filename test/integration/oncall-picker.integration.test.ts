import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureTable } from '../support/fixtures.js';
import { runCli } from '../support/cli.js';
import { driveCompensate } from '../support/compensate-pty.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

// The compensate picker in a pseudo-terminal: it reaches every match, says "all N" when it means
// it, offers only the actions the table can take, and Ctrl-C at any prompt changes nothing.
const ENTER = '\r';
const DOWN = '\u001b[B';
const CTRL_C = '\u0003';
const MATCHES = 196;

let schema: TestSchema;
let cwd: string;

const drive = (args: string[], steps: Array<{ expect: string; send: string }>) =>
  driveCompensate(cwd, args, steps);

const statusCounts = async () => {
  const [rows] = await schema.sql.query(
    'SELECT status, COUNT(*) AS n FROM async_task GROUP BY status ORDER BY status',
  );
  return (rows as Array<{ status: number; n: number }>).map((r) => [r.status, Number(r.n)]);
};
const auditCount = async () => {
  const [rows] = await schema.sql.query('SELECT COUNT(*) AS n FROM taskrecon_audit');
  return Number((rows as Array<{ n: number }>)[0]?.n);
};

beforeAll(async () => {
  schema = await createTestSchema('oncall_picker');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-picker-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'sources:',
      '  tasks: { profile: async-task, default: true }',
      '  failed: { profile: laravel-failed-jobs }',
      '',
    ].join('\n'),
  );
  expect((await runCli(['init', '--source', 'tasks'], { cwd })).code).toBe(0);
  await createFixtureTable(schema, 'laravel_failed_jobs');
  const values = Array.from(
    { length: MATCHES },
    (_, i) => `('coupon', 'o-${i + 1}', 'ev-${i + 1}', 3, 8, 'coupon service said 500 #${i + 1}')`,
  );
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error) VALUES ${values.join(',')}`,
  );
}, 60_000);

afterAll(async () => {
  await schema?.drop();
});

describe('the compensate picker on a terminal', () => {
  it('Ctrl-C at the first prompt: "cancelled, nothing changed", exit 130', async () => {
    const result = await drive(['--source', 'tasks'], [{ expect: '\\? Action', send: CTRL_C }]);
    expect(result.code, result.screen).toBe(130);
    expect(result.screen).toContain('cancelled, nothing changed');
    expect(result.screen).not.toMatch(/bug|DEBUG/);
    expect(await statusCounts()).toEqual([[3, MATCHES]]);
  });

  it('pages through every match: "a" toggles all 196, then Ctrl-C at a later prompt changes nothing', async () => {
    const result = await drive(
      ['--source', 'tasks', '--action', 'mark-compensated'],
      [
        { expect: `${MATCHES} tasks match`, send: DOWN },
        { expect: '❯ Pick from the list', send: ENTER },
        { expect: 'Tasks to mark-compensated', send: 'a' },
        { expect: '◉', send: ENTER },
        { expect: `${MATCHES} task\\(s\\) picked`, send: ENTER },
        { expect: 'Reason', send: CTRL_C },
      ],
    );
    expect(result.failedStep, result.screen).toBeNull();
    expect(result.code).toBe(130);
    expect(result.screen).toContain('cancelled, nothing changed');
    expect(await statusCounts()).toEqual([[3, MATCHES]]);
    expect(await auditCount()).toBe(0);
  });

  it('select all 196 matching: the confirmation says 196 and 196 change, with no table dumped first', async () => {
    const result = await drive(
      ['--source', 'tasks', '--action', 'mark-compensated'],
      [
        { expect: `Select all ${MATCHES} matching tasks`, send: ENTER },
        { expect: 'Reason', send: `bulk refund${ENTER}` },
        {
          expect: `Apply mark-compensated to all ${MATCHES} matching tasks of tasks\\? \\(y/N\\)`,
          send: `y${ENTER}`,
        },
      ],
    );
    expect(result.failedStep, result.screen).toBeNull();
    expect(result.code).toBe(0);
    expect(result.screen).toMatch(new RegExp(`${MATCHES} matched, changed ${MATCHES}`));
    // Before the confirmation: one count line, not a table of the matches.
    const beforeConfirm = result.screen.split('Apply mark-compensated')[0] ?? '';
    expect(beforeConfirm).not.toContain('o-150');
    expect(beforeConfirm.split('\n').length).toBeLessThan(20);
    expect(await statusCounts()).toEqual([[4, MATCHES]]);
    expect(await auditCount()).toBe(MATCHES);
  });

  it('offers only the actions the profile allows (failed jobs: retry and forget)', async () => {
    const result = await drive(['--source', 'failed'], [{ expect: 'forget', send: CTRL_C }]);
    expect(result.code, result.screen).toBe(130);
    const menu = result.screen.split('? Action')[1] ?? '';
    expect(menu).toContain('retry');
    expect(menu).toContain('forget');
    expect(menu).not.toContain('mark-compensated');
    expect(menu).not.toContain('mark-failed');
  });
});
