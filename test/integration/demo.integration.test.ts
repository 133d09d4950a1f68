import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { freePort } from '../support/redis.js';

const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');

/** The lines from `$ COMMAND…` to the first blank line (or the end of a ```console block). */
function exampleOf(text: string, command: string): string[] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`$ ${command}`));
  if (start < 0) return [];
  const out = [lines[start] as string];
  // The demo prints a blank line between the command and its output.
  let k = start + 1;
  while (lines[k] === '') k++;
  for (; k < lines.length && lines[k] !== '' && !lines[k]?.startsWith('```'); k++)
    out.push(lines[k] as string);
  return out;
}

/** Lines with what differs between runs (times, run ids, counts, the operator) replaced. */
function shape(lines: string[]): string[] {
  return lines.map((l) =>
    l
      .replace(/\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?/g, 'TIME')
      .replace(/\b[0-9a-f]{8}\b/g, 'RUN')
      .replace(/\S+@\S+/g, 'OPERATOR')
      .replace(/\d+(\.\d+)?/g, 'N'),
  );
}

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

  describe('printed as a person reads it (no terminal, no Redis)', () => {
    let run: { code: number | null; stdout: string; stderr: string };
    let url: string;
    beforeAll(async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-demo-'));
      url = `redis://127.0.0.1:${await freePort()}/0`;
      run = await runCli(['demo', '--tasks', '200', '--redis', url], { cwd, timeoutMs: 170_000 });
    }, 180_000);

    it('without a Redis leaves out the queues step with one sentence saying so, and succeeds', () => {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(`No Redis at ${url}: the tour leaves out its queues step`);
      expect(run.stdout).not.toMatch(/taskrecon queues /);
      expect(run.stdout).toContain('taskrecon report');
    });

    it("prints the redrive and audit steps as the README's examples show them", () => {
      for (const command of ['taskrecon redrive ', 'taskrecon audit ']) {
        const readme = exampleOf(README, command);
        const printed = exampleOf(run.stdout, command);
        expect(readme.length, `README has an example of ${command}`).toBeGreaterThan(1);
        // The command and the heading lines as printed; every line printed has its like in the
        // README (a smaller sandbox prints fewer rows of the same kinds).
        expect(shape(readme.slice(0, 2)), command).toEqual(shape(printed.slice(0, 2)));
        expect(new Set(shape(readme)), command).toEqual(new Set([...shape(readme), ...shape(printed)]));
        if (command.includes('redrive')) expect(shape(readme)).toEqual(shape(printed));
      }
    });
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
