import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { seedDueTasks } from '../fixtures/redrive/seed.js';

interface RedriveJson {
  claimed: number;
  succeeded: number;
  lostRace: number;
  recoveredStuck: number;
}

/** The lease of both processes, and the handler's run: three leases long. */
const LEASE_SECONDS = 2;
const HANDLER_SECONDS = 3 * LEASE_SECONDS;

let schema: TestSchema;
let cwd: string;
let runsFile: string;

beforeAll(async () => {
  schema = await createTestSchema('production_heartbeat');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-heartbeat-'));
  runsFile = join(cwd, 'runs.log');
  // The handler records each run (the effect), then works for three leases.
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    `db: ${schema.dsn}\nhandlers:\n  default: { type: command, argv: [sh, -c, "echo {eventId} >> ${runsFile}; sleep ${HANDLER_SECONDS}"], timeout: 60s }\n`,
  );
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

afterAll(async () => {
  await schema?.drop();
});

beforeEach(async () => {
  await schema.sql.query('DELETE FROM async_task');
  writeFileSync(runsFile, '');
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const runs = () => (existsSync(runsFile) ? readFileSync(runsFile, 'utf8').split('\n').filter(Boolean) : []);

/**
 * Two redrive processes on one slow task: the second starts once the first one's original lease
 * has passed (and the row is older than --stuck-after), so without a heartbeat it takes the task over.
 */
async function twoProcesses(extra: string[]): Promise<RedriveJson[]> {
  await seedDueTasks(schema.sql, 1, { prefix: 'slow' });
  const args = ['redrive', '--lease', `${LEASE_SECONDS}s`, '--stuck-after', '1s', '--pause', '0ms', ...extra];
  const first = runJson<RedriveJson>(args, { cwd, timeoutMs: 60_000 });
  await sleep((LEASE_SECONDS + 1.5) * 1000);
  const second = runJson<RedriveJson>(args, { cwd, timeoutMs: 60_000 });
  const done = await Promise.all([first, second]);
  for (const run of done) expect(run.code, run.stderr).toBe(0);
  return done.map((r) => r.json);
}

async function taskStatus(): Promise<number[]> {
  const [rows] = await schema.sql.query('SELECT status FROM async_task');
  return (rows as Array<{ status: number }>).map((r) => Number(r.status));
}

describe('the lease heartbeat', () => {
  it('keeps a handler three leases long from running twice: the effect once, lostRace 0, the task success', async () => {
    const [first, second] = await twoProcesses([]);
    expect(runs()).toEqual(['slow-0']);
    expect(first?.claimed).toBe(1);
    expect(first?.succeeded).toBe(1);
    expect((first?.lostRace ?? 0) + (second?.lostRace ?? 0)).toBe(0);
    expect(second?.claimed).toBe(0);
    expect(await taskStatus()).toEqual([2]);
  }, 60_000);

  it('stops at a lost fence: a claim taken over mid-run keeps the new owner, and the late result writes nothing', async () => {
    await seedDueTasks(schema.sql, 1, { prefix: 'taken' });
    const run = runJson<RedriveJson>(['redrive', '--lease', `${LEASE_SECONDS}s`, '--pause', '0ms'], {
      cwd,
      timeoutMs: 60_000,
    });
    // Once the run holds the claim (and a beat or two has passed): another worker's takeover.
    for (let i = 0; i < 100 && (await taskStatus())[0] !== 1; i++) await sleep(100);
    await sleep(1000);
    // Another worker's takeover: a new lease an hour out, the abandoned attempt counted.
    await schema.sql.query(
      'UPDATE async_task SET next_retry_time = NOW() + INTERVAL 1 HOUR, retry_count = retry_count + 1, updated_at = NOW() WHERE status = 1',
    );
    const [before] = await schema.sql.query(
      'SELECT next_retry_time AS nrt, updated_at AS upd FROM async_task',
    );
    const done = await run;
    expect(done.code, done.stderr).toBe(0);
    expect(done.json.claimed).toBe(1);
    expect(done.json.lostRace).toBe(1);
    expect(done.json.succeeded).toBe(0);
    const [after] = await schema.sql.query(
      'SELECT next_retry_time AS nrt, updated_at AS upd FROM async_task',
    );
    expect(after).toEqual(before);
    expect(await taskStatus()).toEqual([1]);
  }, 60_000);

  it('without it (--no-heartbeat) the same two processes run the handler twice and the late result loses the race', async () => {
    const [first, second] = await twoProcesses(['--no-heartbeat']);
    expect(runs()).toEqual(['slow-0', 'slow-0']);
    expect(second?.recoveredStuck).toBe(1);
    expect(first?.lostRace).toBe(1);
    expect(second?.succeeded).toBe(1);
    expect(await taskStatus()).toEqual([2]);
  }, 60_000);
});
