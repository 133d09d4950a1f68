import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';
import { configDir } from '../fixtures/redrive/seed.js';

interface RedriveJson {
  claimed: number;
  succeeded: number;
  lostRace: number;
}

/** The lease of both processes, and the handler's run: three leases long. */
const LEASE_SECONDS = 2;
const HANDLER_SECONDS = 3 * LEASE_SECONDS;

let db: PgTestDatabase;
let cwd: string;
let runsFile: string;

beforeAll(async () => {
  db = await createPgDatabase('pg_heartbeat');
  cwd = configDir('');
  runsFile = join(cwd, 'runs.log');
  // The handler records each run (the effect), then works for three leases.
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    `db: ${db.dsn}\nhandlers:\n  default: { type: command, argv: [sh, -c, "echo {eventId} >> ${runsFile}; sleep ${HANDLER_SECONDS}"], timeout: 60s }\n`,
  );
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  await db?.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const runs = () => (existsSync(runsFile) ? readFileSync(runsFile, 'utf8').split('\n').filter(Boolean) : []);

describe('the lease heartbeat on PostgreSQL', () => {
  it('keeps a handler three leases long from running twice: the effect once, lostRace 0, the task success', async () => {
    await db.sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time, created_at, updated_at)
       VALUES ('coupon', 'order-0', 'slow-0', 0, now() - interval '1 minute', now() - interval '1 minute', now() - interval '1 minute')`,
    );
    const args = ['redrive', '--lease', `${LEASE_SECONDS}s`, '--stuck-after', '1s', '--pause', '0ms'];
    const first = runJson<RedriveJson>(args, { cwd, timeoutMs: 60_000 });
    // The second process starts once the first one's original lease has passed.
    await sleep((LEASE_SECONDS + 1.5) * 1000);
    const second = runJson<RedriveJson>(args, { cwd, timeoutMs: 60_000 });
    const done = await Promise.all([first, second]);
    for (const run of done) expect(run.code, run.stderr).toBe(0);
    expect(runs()).toEqual(['slow-0']);
    expect(done[0]?.json).toMatchObject({ claimed: 1, succeeded: 1, lostRace: 0 });
    expect(done[1]?.json).toMatchObject({ claimed: 0, lostRace: 0 });
    const rows = await db.rows<{ status: number }>('SELECT status FROM async_task');
    expect(rows.map((r) => r.status)).toEqual([2]);
  }, 60_000);
});
