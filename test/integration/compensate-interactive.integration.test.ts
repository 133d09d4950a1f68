import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { driveCompensate } from '../support/compensate-pty.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

const ENTER = '\r';
const DOWN = '\u001b[B';

/** Pick the first task, look at its detail, give a reason, then answer the confirmation. */
const flow = (answer: string) => [
  { expect: 'Tasks to mark-compensated', send: ' ' },
  { expect: '◉', send: ENTER },
  { expect: 'task\\(s\\) picked', send: DOWN },
  { expect: "❯ See a task's detail", send: ENTER },
  { expect: 'Which task', send: ENTER },
  { expect: 'Last error\\s+coupon service said 500', send: '' },
  { expect: 'task\\(s\\) picked', send: ENTER },
  { expect: 'Reason', send: `refund issued by hand${ENTER}` },
  { expect: 'Apply mark-compensated to 1 task\\(s\\) of tasks\\? \\(y/N\\)', send: `${answer}${ENTER}` },
];

describe.each(TEST_ENGINES)('compensate on a terminal without --yes (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;
  let failedId: number;
  let otherId: number;

  const drive = (args: string[], steps: Array<{ expect: string; send: string }>) =>
    driveCompensate(cwd, args, steps);

  const row = async (id: number) =>
    (await db.rows<{ status: number }>('SELECT status, updated_at FROM async_task WHERE id = ?', [id]))[0];
  const auditCount = async () =>
    Number((await db.rows<{ n: number }>('SELECT COUNT(*) AS n FROM taskrecon_audit'))[0]?.n);

  beforeAll(async () => {
    db = await createEngineDb(engine, 'compensate_tty');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-tty-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nsources:\n  tasks: { profile: async-task }\n`,
    );
    expect((await runCli(['init'], { cwd })).code).toBe(0);
    await db.run(`INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error, updated_at) VALUES
      ('coupon', 'o-1', 'ev-1', 3, 7, 'coupon service said 500', ${db.at(-86_400)}),
      ('coupon', 'o-2', 'ev-2', 3, 7, 'coupon service said 500', ${db.at(-86_400)})`);
    const rows = await db.rows<{ id: number }>('SELECT id FROM async_task ORDER BY id');
    [failedId, otherId] = rows.map((r) => r.id) as [number, number];
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('shows the matches with their errors; answering "no" writes nothing', async () => {
    const before = [await row(failedId), await row(otherId)];
    // No --action: the picker asks for it first (retry is first in the list, mark-compensated second).
    const result = await drive(
      [],
      [{ expect: '\\? Action', send: DOWN }, { expect: '❯ mark-compensated', send: ENTER }, ...flow('n')],
    );
    expect(result.failedStep, result.screen).toBeNull();
    expect(result.code).toBe(0);
    expect(result.screen).toMatch(/Matching tasks in tasks[\s\S]*o-1[\s\S]*coupon service said 500/);
    expect(result.screen).toMatch(/Nothing changed\./);
    expect([await row(failedId), await row(otherId)]).toEqual(before);
    expect(await auditCount()).toBe(0);
  });

  it('answering "yes" writes the change and its audit row, for the picked task only', async () => {
    const result = await drive(['--action', 'mark-compensated', '--operator', 'carol@desk'], flow('y'));
    expect(result.failedStep, result.screen).toBeNull();
    expect(result.code).toBe(0);
    expect(result.screen).toMatch(/changed 1/);
    expect((await row(failedId))?.status).toBe(4);
    expect((await row(otherId))?.status).toBe(3);
    const rows = await db.rows(
      'SELECT task_id, action, operator, reason, from_status, to_status FROM taskrecon_audit',
    );
    expect(rows).toEqual([
      {
        task_id: String(failedId),
        action: 'mark-compensated',
        operator: 'carol@desk',
        reason: 'refund issued by hand',
        from_status: 'failed',
        to_status: 'compensated',
      },
    ]);
  });

  it('without a terminal and without --yes it refuses with exit 3', async () => {
    const result = await runCli(['compensate', String(otherId), '--action', 'mark-compensated'], { cwd });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/not a terminal/);
    expect((await row(otherId))?.status).toBe(3);
  });
});
