import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { freePort } from '../support/redis.js';

interface DemoJson {
  file: string;
  tasks: number;
  businessRows: number;
  steps: Array<{ title: string; command: string; exitCode: number; ok: boolean }>;
}

describe('demo', () => {
  it('builds a sandbox with no server and walks through every step it knows, each as the user would run it', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-demo-'));
    const { code, json, stderr } = await runJson<DemoJson>(['demo', '--tasks', '400'], {
      cwd,
      timeoutMs: 170_000,
    });
    expect(code, stderr).toBe(0);
    expect(json.tasks).toBe(400);
    expect(json.steps.length).toBeGreaterThan(0);
    // The test machine's Redis answers on 127.0.0.1:6379, so the tour shows the queue half too.
    expect(json.steps.some((s) => s.command.startsWith('taskrecon queues '))).toBe(true);
    for (const step of json.steps) {
      expect(step.ok, `${step.title}: ${step.command}`).toBe(true);
      expect(step.command).toMatch(/^taskrecon .* --config taskrecon-demo\.config\.yaml$/);
    }
    expect(readFileSync(join(cwd, 'taskrecon-demo.config.yaml'), 'utf8')).toContain(
      'db: sqlite:taskrecon-demo.sqlite',
    );
    // The printed commands work from the same directory.
    const scan = await runJson<{ summary: { total: number } }>(
      ['scan', '--config', 'taskrecon-demo.config.yaml'],
      { cwd },
    );
    expect(scan.json.summary.total).toBe(400);
  });

  it('without a Redis leaves out the queues step with one sentence saying so, and succeeds', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-demo-'));
    const url = `redis://127.0.0.1:${await freePort()}/0`;
    const { code, stdout, stderr } = await runCli(['demo', '--tasks', '200', '--redis', url], {
      cwd,
      timeoutMs: 170_000,
    });
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(`No Redis at ${url}: the tour leaves out its queues step`);
    expect(stdout).not.toMatch(/taskrecon queues /);
    expect(stdout).toContain('taskrecon report');
  });

  it('leaves a file that is not a sandbox alone', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-demo-'));
    writeFileSync(join(cwd, 'precious.sqlite'), 'not a sandbox');
    const result = await runCli(['demo', '--file', 'precious.sqlite', '--no-tour'], { cwd });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('is not a taskrecon sandbox');
    expect(readFileSync(join(cwd, 'precious.sqlite'), 'utf8')).toBe('not a sandbox');
  });

  it('points a user without a DSN at demo, with exit 3', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-nodsn-'));
    const result = await runCli(['scan'], { cwd });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('no database given');
    expect(result.stderr).toContain('taskrecon demo');
  });
});
