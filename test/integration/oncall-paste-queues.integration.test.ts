import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareDemoQueues, type DemoQueues } from '../../src/verbs/demo/queues.js';
import { runCli, runJson } from '../support/cli.js';

// queues and sweep print commands to paste with the connection and the broker the user ran with:
// the pasted command reaches the same database and the same Redis keys.
let dir: string;
let config: string;
let queues: DemoQueues;
let broker: string[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-paste-queues-'));
  expect((await runCli(['demo', '--no-tour', '--tasks', '50'], { cwd: dir })).code).toBe(0);
  config = join(dir, 'taskrecon-demo.config.yaml');
  queues = await prepareDemoQueues();
  // The scratch prefix of Laravel-layout jobs (a due delayed job, an expired reservation, a renamed queue).
  broker = (queues.step?.args({} as never) ?? []).slice(1, 7);
  expect(broker[0]).toBe('--redis');
}, 60_000);

afterAll(async () => {
  await queues?.cleanup();
});

/** The backticked `taskrecon …` command of a hint that starts with `start`. */
function pasted(text: string, start: string): string {
  const found = [...text.matchAll(/`(taskrecon [^`]*)`/g)].map((m) => m[1] as string);
  const command = found.find((c) => c.startsWith(start));
  expect(command, text).toBeDefined();
  return command as string;
}

describe('queues and sweep print commands that carry the connection and the broker', () => {
  it('a queues finding hint names --config and the --redis broker with its key layout, and the pasted command works', async () => {
    const run = await runCli(['queues', '--config', config, ...broker, '--queue', 'sms'], { cwd: tmpdir() });
    expect(run.code, run.stderr).toBe(1);
    const recover = pasted(run.stdout, 'taskrecon queues recover --queue sms');
    expect(recover).toBe(`taskrecon queues recover --queue sms --config ${config} ${broker.join(' ')}`);
    expect(pasted(run.stdout, 'taskrecon queues move')).toContain(` --config ${config} ${broker.join(' ')}`);
    // The note about the snapshot table names the database only: init takes no broker.
    expect(pasted(run.stderr, 'taskrecon init')).toBe(`taskrecon init --audit-only --config ${config}`);

    // Pasted as printed (from another directory), it reaches the same keys: one due delayed job.
    const dry = await runJson<{ results: Array<{ what: string; matched: number }> }>(
      [...recover.split(' ').slice(1), '--dry-run'],
      { cwd: tmpdir() },
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json.results.find((r) => r.what === 'delayed')?.matched).toBe(1);

    const json = await runJson<{ findings: Array<{ code: string; hint: string }> }>(
      ['queues', '--config', config, ...broker, '--queue', 'sms'],
      { cwd: tmpdir() },
    );
    const hint = json.json.findings.find((f) => f.code === 'delayed-overdue')?.hint ?? '';
    expect(pasted(hint, 'taskrecon queues recover')).toBe(recover);
  });

  it('queues recover prints the audit command with --config and without the broker', async () => {
    const run = await runCli(
      ['queues', 'recover', '--queue', 'sms', '--yes', '--config', config, ...broker],
      { cwd: tmpdir() },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(
        `audited as run \\S+: taskrecon audit --run \\S+ --config ${config.replace(/\./g, '\\.')}$`,
        'm',
      ),
    );
  });

  it('sweep prints the audit command of its run with --config', async () => {
    const run = await runCli(['sweep', '--since', '1h', '--config', config], { cwd: tmpdir() });
    expect(run.code, run.stderr).toBe(0);
    const line = /run (\S+): (taskrecon audit .*)$/m.exec(run.stdout);
    expect(line, run.stdout).not.toBeNull();
    expect(line?.[2]).toBe(`taskrecon audit --run ${line?.[1]} --config ${config}`);
  });
});
