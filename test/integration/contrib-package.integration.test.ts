import Database from 'better-sqlite3';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureAptPackages } from '../support/apt.js';
import { bashComplete, zshComplete } from '../support/completion.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The package as a user gets it: `npm pack`, `npm install -g` of the tarball into a scratch prefix
// (its dependencies from the registry, better-sqlite3's native build included), then, from a
// folder outside the project: --version, -v and version agree; bash and zsh complete commands and
// flags; a read-only scan of a SQLite table works; the shipped systemd units verify against the
// installed binary. One install for the whole file: it is slow (minutes, for the native build).

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

let scratch: string;
let binary: string;
let env: NodeJS.ProcessEnv;
let elsewhere: string;
let tarballFiles: string[];
const timings: Record<string, number> = {};

function taskrecon(args: string[], cwd = elsewhere): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(binary, args, { cwd, env, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

beforeAll(() => {
  ensureAptPackages(['zsh']);
  if (!existsSync(join(ROOT, 'dist/commands/version.js')))
    throw new Error('dist/ is not built: run `npm run build` first');
  scratch = mkdtempSync(join(tmpdir(), 'taskrecon-pack-'));
  let started = Date.now();
  // The build is already in dist/ (the tests run the compiled CLI): pack it as it is.
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  timings.packMs = Date.now() - started;
  tarballFiles = packed[0]!.files.map((f) => f.path);
  const prefix = join(scratch, 'prefix');
  started = Date.now();
  execFileSync(
    'npm',
    ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', join(scratch, packed[0]!.filename)],
    {
      cwd: scratch,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 1_500_000,
    },
  );
  timings.installMs = Date.now() - started;
  binary = join(prefix, 'bin', 'taskrecon');
  elsewhere = join(scratch, 'elsewhere');
  mkdirSync(elsewhere);
  env = {
    ...process.env,
    PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}`,
    HOME: join(scratch, 'home'),
    XDG_CACHE_HOME: join(scratch, 'cache'),
    XDG_CONFIG_HOME: join(scratch, 'config'),
    XDG_DATA_HOME: join(scratch, 'data'),
    NO_COLOR: '1',
    TASKRECON_DB: '',
  };
  mkdirSync(env.HOME!);
  process.stderr.write(`npm pack ${timings.packMs} ms, npm install -g ${timings.installMs} ms\n`);
}, 1_800_000);

// The scratch prefix holds a whole install (over 100 MB): removed after the file.
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('ships the CLI, the contrib files, the licence and the schemas, and no sources or tests', () => {
    for (const file of [
      'LICENSE',
      'README.md',
      'bin/run.js',
      'dist/commands/version.js',
      'oclif.manifest.json',
      'schemas/version.schema.json',
      'contrib/prometheus/taskrecon.rules.yml',
      'contrib/prometheus/taskrecon.rules.test.yml',
      'contrib/grafana/taskrecon.json',
      'contrib/systemd/taskrecon-redrive.service',
      'contrib/systemd/taskrecon-redrive.timer',
      'contrib/systemd/taskrecon-report.service',
      'contrib/systemd/taskrecon-report.timer',
      'contrib/systemd/taskrecon.sysusers',
      'contrib/systemd/taskrecon.tmpfiles',
    ])
      expect(tarballFiles).toContain(file);
    expect(tarballFiles.filter((f) => f.startsWith('test/') || /^src\/.*\.ts$/.test(f))).toEqual([]);
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
  });
});

describe('the installed command, run from another folder', () => {
  it('--version, -v and version print the same line; version --json says it too', () => {
    const expected = new RegExp(
      `^${pkg.name}/${pkg.version.replaceAll('.', '\\.')} \\S+ node-v\\d+\\.\\d+\\.\\d+\\n$`,
    );
    const long = taskrecon(['--version']);
    expect(long.code, long.stderr).toBe(0);
    expect(long.stdout).toMatch(expected);
    expect(taskrecon(['-v']).stdout).toBe(long.stdout);
    expect(taskrecon(['version']).stdout).toBe(long.stdout);
    const json = taskrecon(['version', '--json']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { userAgent: string; version: string };
    assertMatchesSchema('version', parsed);
    expect(parsed.userAgent).toBe(long.stdout.trim());
    expect(parsed.version).toBe(pkg.version);
  });

  it('a read-only scan of a SQLite table (the native driver built at install)', () => {
    const data = join(scratch, 'data-folder');
    mkdirSync(data);
    const dsn = `sqlite:${join(data, 'tasks.sqlite')}`;
    const init = taskrecon(['init', '--db', dsn]);
    expect(init.code, init.stderr).toBe(0);
    const db = new Database(join(data, 'tasks.sqlite'));
    db.exec(`INSERT INTO async_task (biz_type, biz_id, event_id, status, next_retry_time, updated_at) VALUES
      ('sms', 'b1', 'e1', 0, datetime('now', '-5 minutes'), datetime('now')),
      ('coupon', 'b2', 'e2', 3, datetime('now'), datetime('now'))`);
    db.close();
    const before = readFileSync(join(data, 'tasks.sqlite'));
    const scan = taskrecon(['scan', '--db', dsn, '--json']);
    expect(scan.code, scan.stderr).toBe(0);
    const json = JSON.parse(scan.stdout) as { summary: { due: number; total?: number } };
    assertMatchesSchema('scan', json);
    expect(json.summary.due).toBe(1);
    expect(readFileSync(join(data, 'tasks.sqlite')).equals(before)).toBe(true);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('bash completes commands, topics and flags', () => {
    // The command builds its completion files, then prints the line for ~/.bashrc.
    const build = taskrecon(['autocomplete', 'bash']);
    expect(build.code, build.stderr).toBe(0);
    const setup = taskrecon(['autocomplete', 'script', 'bash']).stdout.trim();
    expect(setup).toContain('TASKRECON_AC_BASH_SETUP_PATH=');
    const complete = (...words: string[]) => bashComplete(setup, words, env, elsewhere);
    expect(complete('taskrecon', 're')).toEqual(['redrive', 'report']);
    expect(complete('taskrecon', 'queues', 'm')).toEqual(['move']);
    expect(complete('taskrecon', 'report', '--for')).toEqual(['--format']);
    expect(complete('taskrecon', 'ver')).toEqual(['version']);
    // Without the setup line bash knows no taskrecon completion.
    const bare = spawnSync('bash', ['-c', 'complete -p taskrecon'], { env, encoding: 'utf8' });
    expect(bare.status).not.toBe(0);
  });

  it('zsh completes commands, topics and flags', () => {
    const build = taskrecon(['autocomplete', 'zsh']);
    expect(build.code, build.stderr).toBe(0);
    const functions = join(env.XDG_CACHE_HOME!, 'taskrecon/autocomplete/functions/zsh');
    expect(existsSync(join(functions, '_taskrecon'))).toBe(true);
    expect(taskrecon(['autocomplete', 'script', 'zsh']).stdout).toContain('TASKRECON_AC_ZSH_SETUP_PATH=');
    const complete = (line: string, dir = functions) => zshComplete(dir, line, env, elsewhere);
    expect(complete('taskrecon re')).toEqual(['redrive', 'report']);
    expect(complete('taskrecon queues ')).toEqual(['move', 'recover']);
    expect(complete('taskrecon report --form')).toEqual(['--format']);
    // Without the function on fpath zsh offers no taskrecon command (the check can fail).
    const empty = join(scratch, 'no-functions');
    mkdirSync(empty);
    expect(complete('taskrecon re', empty)).not.toContain('redrive');
  });

  it('the shipped systemd units verify against the installed binary', () => {
    const units = join(scratch, 'units');
    mkdirSync(units);
    const names = readdirSync(join(ROOT, 'contrib/systemd')).filter((f) => /\.(service|timer)$/.test(f));
    for (const name of names)
      writeFileSync(
        join(units, name),
        readFileSync(join(ROOT, 'contrib/systemd', name), 'utf8').replaceAll(
          '/usr/local/bin/taskrecon',
          binary,
        ),
      );
    const result = spawnSync('systemd-analyze', ['verify', '--man=no', ...names.map((n) => join(units, n))], {
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
