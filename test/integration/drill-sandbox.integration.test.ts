import { XMLParser } from 'fast-xml-parser';
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
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { assertMatchesSchema } from '../support/schemas.js';

interface DrillJson {
  runId: string;
  passed: number;
  failed: number;
  durationMs: number;
  sandboxFile: string | null;
  keptRows: number;
  scenarios: Array<{
    name: string;
    status: string;
    durationMs: number;
    steps: Array<{ name: string; status: string; detail: string }>;
  }>;
}

const RECORDER = fileURLToPath(new URL('../support/record-connections.mjs', import.meta.url));
const ALL = ['unreachable-target', 'duplicate-delivery', 'permanent-error', 'worker-crash', 'slow-target'];
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-drill-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function failedSteps(json: DrillJson): string[] {
  return json.scenarios.flatMap((s) =>
    s.steps.filter((st) => st.status === 'failed').map((st) => `${s.name}: ${st.name}`),
  );
}

describe('taskrecon drill on the embedded sandbox', () => {
  it('passes all five scenarios with no server, exits 0, and writes JUnit a JUnit consumer reads', async () => {
    const junit = join(dir, 'drill.xml');
    const connections = join(dir, 'connections.ndjson');
    const temp = join(dir, 'tmp');
    mkdirSync(temp);
    const { code, json, stderr } = await runJson<DrillJson>(['drill', '--junit', junit], {
      cwd: dir,
      env: {
        TZ: 'America/New_York',
        TMPDIR: temp,
        NODE_OPTIONS: `--import=${RECORDER}`,
        TASKRECON_RECORD_CONNECTIONS: connections,
      },
    });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('drill', json);
    expect(json.scenarios.map((s) => s.name)).toEqual(ALL);
    expect(failedSteps(json)).toEqual([]);
    expect(json).toMatchObject({ passed: 5, failed: 0, sandboxFile: null, keptRows: 0 });
    expect(readdirSync(temp)).toEqual([]); // the sandbox is gone
    // unreachable-target checks all 7 retries of the default schedule, twice, then compensates.
    const unreachable = json.scenarios[0]!;
    expect(unreachable.steps.filter((s) => /retry \d is scheduled per the policy/.test(s.name))).toHaveLength(
      14,
    );
    expect(unreachable.steps.map((s) => s.name)).toContain('the audit log records the manual retry');

    const parsed = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      isArray: (n) => n === 'testsuite' || n === 'testcase',
    }).parse(readFileSync(junit, 'utf8'));
    const suites = parsed.testsuites.testsuite as Array<{
      name: string;
      failures: string;
      testcase: unknown[];
    }>;
    expect(suites.map((s) => s.name)).toEqual(ALL);
    expect(suites.every((s) => s.failures === '0')).toBe(true);
    expect(Number(parsed.testsuites.tests)).toBe(json.scenarios.reduce((n, s) => n + s.steps.length, 0));

    // Nothing but loopback was contacted by the drill process.
    const seen = readFileSync(connections, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { host: string; port: number });
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.filter((c) => !['127.0.0.1', '::1', 'localhost'].includes(c.host))).toEqual([]);
  });

  it('fails duplicate-delivery, worker-crash and slow-target against the non-idempotent handler, naming the step', async () => {
    // unreachable-target does not depend on the handler's idempotency (the MariaDB test runs all five).
    const scenarios = ALL.slice(1).flatMap((name) => ['--scenario', name]);
    const { code, json } = await runJson<DrillJson>(
      ['drill', ...scenarios, '--handler-variant', 'non-idempotent'],
      {
        cwd: dir,
      },
    );
    expect(code).toBe(1);
    assertMatchesSchema('drill', json);
    expect(json).toMatchObject({ passed: 1, failed: 3 });
    expect(failedSteps(json)).toEqual([
      'duplicate-delivery: deliver the same event again, after the first: the effect is still once',
      'worker-crash: the effect exists once',
      'slow-target: the effect exists once',
    ]);
    const dup = json.scenarios.find((s) => s.name === 'duplicate-delivery')!;
    expect(dup.steps.find((s) => s.status === 'failed')?.detail).toMatch(
      /user_coupon has 2 rows .* not idempotent/,
    );
    expect(dup.steps.filter((s) => s.status === 'skipped').length).toBeGreaterThan(0);
  });

  it('fails unreachable-target when the configured policy does not back off or never gives up', async () => {
    writeFileSync(join(dir, 'nobackoff.yaml'), 'retry:\n  default: { policy: fixed, interval: 0s }\n');
    const none = await runJson<DrillJson>(
      ['drill', '--scenario', 'unreachable-target', '--config', join(dir, 'nobackoff.yaml')],
      { cwd: dir },
    );
    expect(none.code).toBe(1);
    expect(failedSteps(none.json)).toEqual(['unreachable-target: the retry policy backs off and gives up']);
    expect(none.json.scenarios[0]?.steps[0]?.detail).toContain('retry 1 waits 0s');

    writeFileSync(
      join(dir, 'forever.yaml'),
      'retry:\n  coupon: { policy: exponential, base: 1s, maxAttempts: 1000 }\n',
    );
    const forever = await runJson<DrillJson>(
      ['drill', '--scenario', 'unreachable-target', '--config', join(dir, 'forever.yaml')],
      { cwd: dir },
    );
    expect(forever.code).toBe(1);
    expect(forever.json.scenarios[0]?.steps[0]?.detail).toContain('allows 999 retries');
  });

  it('prints the steps and GitHub Actions annotations for failed steps when GITHUB_ACTIONS is set', async () => {
    const { code, stdout } = await runCli(
      ['drill', '--scenario', 'slow-target', '--handler-variant', 'non-idempotent'],
      {
        cwd: dir,
        env: { GITHUB_ACTIONS: 'true' },
      },
    );
    expect(code).toBe(1);
    expect(stdout).toContain(
      '::error title=drill slow-target%3A the effect exists once::the effect exists once failed: user_coupon has 2 rows',
    );
    expect(stdout).toContain('FAIL slow-target');
    expect(stdout).toContain('✗ the effect exists once');
    expect(stdout).toContain('0 passed, 1 failed');
  });

  it('keeps the sandbox and its drill rows with --keep', async () => {
    const { code, json } = await runJson<DrillJson>(['drill', '--scenario', 'permanent-error', '--keep'], {
      cwd: dir,
    });
    expect(code).toBe(0);
    expect(json.sandboxFile).toBeTruthy();
    expect(json.keptRows).toBe(1);
    const db = new Database(json.sandboxFile!, { readonly: true });
    const rows = db.prepare('SELECT event_id, status FROM async_task').all() as Array<{
      event_id: string;
      status: number;
    }>;
    db.close();
    expect(rows).toEqual([{ event_id: `drill-${json.runId}-permanent-error`, status: 3 }]);
    rmSync(join(json.sandboxFile!, '..'), { recursive: true, force: true });
  });

  it('refuses bad input with exit 3 and a message naming the flag', async () => {
    const rule = await runCli(['drill', '--diff-rule', 'coupon-issued'], { cwd: dir });
    expect(rule.code).toBe(3);
    expect(rule.stderr).toContain('--diff-rule needs --handler-url');
    const junit = await runCli(['drill', '--junit', join(dir, 'missing', 'x.xml')], { cwd: dir });
    expect(junit.code).toBe(3);
    expect(junit.stderr).toContain('--junit');
    expect(existsSync(join(dir, 'missing'))).toBe(false);
    const url = await runCli(['drill', '--handler-url', 'http://127.0.0.1:9/tasks'], {
      cwd: dir,
      env: { TASKRECON_DB: 'sqlite:/nonexistent.sqlite' },
    });
    expect(url.code).toBe(3);
    expect(url.stderr).toContain('--handler-url needs --diff-rule');
    const scenario = await runCli(['drill', '--scenario', 'meteor-strike'], { cwd: dir });
    expect(scenario.code).toBe(3);
  });
});
