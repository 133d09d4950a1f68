import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensurePrometheusPackages } from '../support/prometheus-stack.js';
import { readRules, RULES_FILE, RULES_TEST_FILE } from '../support/promql-names.js';

// contrib/prometheus/ checked by Debian's promtool: the rules load, and their unit tests (each alert
// firing and not firing, the recording rules by value) pass; a rule changed under its tests fails.

function promtool(...args: string[]): { code: number | null; out: string } {
  const result = spawnSync('promtool', args, { encoding: 'utf8', timeout: 120_000 });
  return { code: result.status, out: `${result.stdout}${result.stderr}` };
}

/** A copy of the rules and their tests in a folder of its own, the rules passed through `edit`. */
function copyWith(edit: (rules: string) => string): string {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-rules-'));
  writeFileSync(join(dir, 'taskrecon.rules.yml'), edit(readFileSync(RULES_FILE, 'utf8')));
  copyFileSync(RULES_TEST_FILE, join(dir, 'taskrecon.rules.test.yml'));
  return dir;
}

beforeAll(() => {
  ensurePrometheusPackages(['prometheus']);
}, 1_800_000);

describe('promtool on contrib/prometheus', () => {
  it('check rules: every rule loads', () => {
    const { code, out } = promtool('check', 'rules', RULES_FILE);
    expect(code, out).toBe(0);
    const count = readRules().groups.flatMap((g) => g.rules).length;
    expect(out).toContain(`SUCCESS: ${count} rules found`);
  });

  it('test rules: the unit tests pass', () => {
    const { code, out } = promtool('test', 'rules', RULES_TEST_FILE);
    expect(code, out).toBe(0);
    expect(out).toContain('SUCCESS');
  });

  it('the unit tests show every alert firing and not firing', () => {
    interface UnitTests {
      tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    }
    const tests = parseYaml(readFileSync(RULES_TEST_FILE, 'utf8')) as UnitTests;
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    const alerts = readRules()
      .groups.flatMap((g) => g.rules)
      .flatMap((r) => (r.alert ? [r.alert] : []));
    for (const alert of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} is never tested firing`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} is never tested not firing`,
      ).toBe(true);
    }
  });
});

describe('the checks can fail', () => {
  it('test rules fails when an alert no longer fires as its tests say', () => {
    const dir = copyWith((rules) =>
      rules.replace('taskrecon_report_failure_ratio >= 0.05', 'taskrecon_report_failure_ratio >= 0.5'),
    );
    const { code, out } = promtool('test', 'rules', join(dir, 'taskrecon.rules.test.yml'));
    expect(code).not.toBe(0);
    expect(out).toContain('alertname: TaskreconFailureRateHigh');
  });

  it('test rules fails when a not-firing case would fire', () => {
    const dir = copyWith((rules) =>
      rules.replace('taskrecon_report_created >= 20', 'taskrecon_report_created >= 1'),
    );
    const { code, out } = promtool('test', 'rules', join(dir, 'taskrecon.rules.test.yml'));
    expect(code).not.toBe(0);
    expect(out).toContain('biz_type="sms"');
  });

  it('check rules fails on a rule that does not parse', () => {
    const dir = copyWith((rules) => rules.replace('taskrecon_report_stuck > 0', 'taskrecon_report_stuck >'));
    const { code, out } = promtool('check', 'rules', join(dir, 'taskrecon.rules.yml'));
    expect(code).not.toBe(0);
    expect(out).toMatch(/FAILED|parse error/);
  });
});
