import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The app writes its times in -05:00 and the CLI runs in Tokyo.
describe.each(TEST_ENGINES)('compensate on the job-retries profile (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;

  const rows = <T>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);
  const byJob = async (jobId: string) =>
    (
      await rows<Record<string, unknown>>(
        `SELECT *, ${db.epoch('next_retry_at')} - ${db.epoch('now')} AS due_in FROM job_retries WHERE job_id = ?`,
        [jobId],
      )
    )[0];

  beforeAll(async () => {
    db = await createEngineDb(engine, 'compensate_job_retries', { timeZone: '-05:00' });
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-jr-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nappTimeZone: "-05:00"\nsources:\n  jobs: { profile: job-retries }\n`,
    );
    expect((await runCli(['init', '--profile', 'job-retries'], { cwd })).code).toBe(0);
    await db.run(`INSERT INTO job_retries (job_id, task_name, payload, attempts, max_attempts, last_error, next_retry_at, status) VALUES
    ('j-failed', 'send_sms', '{"to":"138"}', 3, 3, 'gateway 502', ${db.at(-86_400)}, 'failed'),
    ('j-retrying', 'send_sms', '{"to":"139"}', 1, 3, NULL, ${db.at(-3600)}, 'retrying'),
    ('j-forget', 'export', '{}', 3, 3, 'bad request', ${db.at(-86_400)}, 'failed')`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('retries a failed job: pending, attempts 0, due now in the app zone, audited', async () => {
    const id = Number((await byJob('j-failed'))?.id);
    const { code, json } = await runJson<{ results: unknown[] }>(
      ['compensate', String(id), '--action', 'retry', '--reason', 'gateway fixed', '--yes'],
      {
        cwd,
        env: { TZ: 'Asia/Tokyo' },
      },
    );
    expect(code).toBe(0);
    assertMatchesSchema('compensate', json);
    const after = await byJob('j-failed');
    expect(after).toMatchObject({ status: 'pending', attempts: 0 });
    expect(Math.abs(Number(after?.due_in))).toBeLessThan(30);
    const [audit] = await rows<{
      event_id: string;
      from_status: string;
      to_status: string;
      before_json: string;
    }>('SELECT * FROM taskrecon_audit WHERE task_id = ?', [String(id)]);
    expect(audit).toMatchObject({ event_id: 'j-failed', from_status: 'failed', to_status: 'pending' });
    expect(JSON.parse(audit?.before_json as string)).toMatchObject({ status: 'failed', attempts: 3 });
  });

  it('marks a retrying (processing) job failed, and forgets a failed one', async () => {
    const retrying = Number((await byJob('j-retrying'))?.id);
    const forget = Number((await byJob('j-forget'))?.id);
    expect(
      (await runJson(['compensate', String(retrying), '--action', 'mark-failed', '--yes'], { cwd })).code,
    ).toBe(0);
    expect((await byJob('j-retrying'))?.status).toBe('failed');
    expect((await runJson(['compensate', String(forget), '--action', 'forget', '--yes'], { cwd })).code).toBe(
      0,
    );
    expect(await byJob('j-forget')).toBeUndefined();
  });

  it('refuses mark-compensated: its statuses have no compensated value', async () => {
    const result = await runCli(['compensate', '--action', 'mark-compensated', '--yes'], { cwd });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/job-retries has no 'compensated' status/);
  });
});
