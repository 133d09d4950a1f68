import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureAptPackages } from '../support/apt.js';
import { runCli, runJson } from '../support/cli.js';
import { bashComplete, zshComplete } from '../support/completion.js';
import { assertMatchesSchema } from '../support/schemas.js';

// Completion and the version on whatever Node runs the tests (the smoke set runs this file on
// Node 22 and 24 too): `autocomplete` builds the bash and zsh functions under the cache folder,
// and they complete commands, topics and flags; --version, -v and version agree.

let env: NodeJS.ProcessEnv;
let cwd: string;

beforeAll(() => {
  ensureAptPackages(['zsh']);
  const scratch = mkdtempSync(join(tmpdir(), 'taskrecon-completion-'));
  cwd = join(scratch, 'work');
  mkdirSync(cwd);
  env = { HOME: scratch, XDG_CACHE_HOME: join(scratch, 'cache'), XDG_CONFIG_HOME: join(scratch, 'config') };
}, 1_800_000);

describe('completion', () => {
  it('bash: the setup line installs a function that completes commands, topics and flags', async () => {
    const build = await runCli(['autocomplete', 'bash'], { env, cwd });
    expect(build.code, build.stderr).toBe(0);
    const setup = (await runCli(['autocomplete', 'script', 'bash'], { env, cwd })).stdout.trim();
    const shellEnv = { ...process.env, ...env };
    const complete = (...words: string[]) => bashComplete(setup, words, shellEnv, cwd);
    expect(complete('taskrecon', 're')).toEqual(['redrive', 'report']);
    expect(complete('taskrecon', 'queues', 'r')).toEqual(['recover']);
    expect(complete('taskrecon', 'scan', '--stat')).toEqual(['--status']);
    expect(complete('taskrecon', 'nosuch')).toEqual([]);
  });

  it('zsh: the function on fpath completes commands, topics and flags', async () => {
    const build = await runCli(['autocomplete', 'zsh'], { env, cwd });
    expect(build.code, build.stderr).toBe(0);
    const functions = join(env.XDG_CACHE_HOME!, 'taskrecon/autocomplete/functions/zsh');
    expect(existsSync(join(functions, '_taskrecon'))).toBe(true);
    const shellEnv = { ...process.env, ...env };
    expect(zshComplete(functions, 'taskrecon dr', shellEnv, cwd)).toEqual(['drill']);
    expect(zshComplete(functions, 'taskrecon queues ', shellEnv, cwd)).toEqual(['move', 'recover']);
    expect(zshComplete(functions, 'taskrecon redrive --max-t', shellEnv, cwd)).toEqual(['--max-tasks']);
    // The driver sees no taskrecon completion without the function (the check can fail).
    const empty = join(env.HOME!, 'empty');
    mkdirSync(empty);
    expect(zshComplete(empty, 'taskrecon dr', shellEnv, cwd)).not.toContain('drill');
  });
});

describe('version', () => {
  it('--version, -v and version print the same line; --json carries it', async () => {
    const long = await runCli(['--version'], { cwd });
    expect(long.code).toBe(0);
    expect(long.stdout).toMatch(new RegExp(`^taskrecon/\\d+\\.\\d+\\.\\d+ \\S+ node-${process.version}\\n$`));
    expect((await runCli(['-v'], { cwd })).stdout).toBe(long.stdout);
    expect((await runCli(['version'], { cwd })).stdout).toBe(long.stdout);
    const { code, json } = await runJson<{ userAgent: string; node: string }>(['version'], { cwd });
    expect(code).toBe(0);
    assertMatchesSchema('version', json);
    expect(json.userAgent).toBe(long.stdout.trim());
    expect(json.node).toBe(process.versions.node);
    // A bad flag is a usage error: exit 3, said in JSON with --json.
    const bad = await runJson<{ error: { code: string } }>(['version', '--nope'], { cwd });
    expect(bad.code).toBe(3);
    assertMatchesSchema('error', bad.json);
    expect(bad.json.error.code).toBe('USAGE');
  });
});
