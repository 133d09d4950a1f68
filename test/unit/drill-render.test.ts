import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import type { DrillResult } from '../../src/verbs/drill/drill.js';
import { data, githubAnnotations, property } from '../../src/render/drill-annotations.js';
import { renderJunit } from '../../src/render/junit.js';

function result(): DrillResult {
  return {
    runId: 'ab12cd34',
    target: {
      mode: 'sandbox',
      description: 'the embedded sandbox',
      db: 'sqlite:/tmp/x',
      source: 's',
      table: 'async_task',
      handler: 'http://127.0.0.1:1/tasks',
    },
    passed: 1,
    failed: 1,
    durationMs: 1234,
    keptRows: 0,
    sandboxFile: null,
    scenarios: [
      {
        name: 'permanent-error',
        summary: '',
        status: 'passed',
        durationMs: 200,
        steps: [
          {
            name: 'redrive: failed on "first" attempt',
            status: 'passed',
            detail: 'last error: HTTP 422 <body> & more',
            durationMs: 120,
          },
        ],
      },
      {
        name: 'slow-target',
        summary: '',
        status: 'failed',
        durationMs: 900,
        steps: [
          { name: 'inject', status: 'passed', detail: 'task #1', durationMs: 3 },
          {
            name: 'the effect exists once',
            status: 'failed',
            detail: 'user_coupon has 2 rows\nfor drill-ab12cd34-slow: 50% off, <dup> \u0001',
            durationMs: 7,
          },
          { name: 'cleanup', status: 'skipped', detail: 'skipped: an earlier step failed', durationMs: 0 },
        ],
      },
    ],
  };
}

describe('JUnit XML of a drill', () => {
  it('is well-formed XML a JUnit consumer reads: suites, cases, failures and skips with escaped text', () => {
    const xml = renderJunit(result(), new Date('2026-11-29T10:00:00Z'));
    expect(XMLValidator.validate(xml)).toBe(true);
    const parsed = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      isArray: (name) => ['testsuite', 'testcase'].includes(name),
    }).parse(xml);
    const root = parsed.testsuites;
    expect(root).toMatchObject({ tests: '4', failures: '1', skipped: '1', time: '1.234' });
    expect(root.testsuite.map((s: { name: string }) => s.name)).toEqual(['permanent-error', 'slow-target']);
    const slow = root.testsuite[1];
    expect(slow).toMatchObject({ tests: '3', failures: '1', skipped: '1', timestamp: '2026-11-29T10:00:00' });
    const failedCase = slow.testcase[1];
    expect(failedCase.name).toBe('the effect exists once');
    expect(failedCase.classname).toBe('drill.slow-target');
    expect(failedCase.failure.message).toContain('<dup>');
    expect(failedCase.failure['#text']).toContain('for drill-ab12cd34-slow: 50% off, <dup>');
    expect(failedCase.failure['#text']).not.toContain('\u0001');
    expect(slow.testcase[2].skipped).toBeDefined();
    expect(root.testsuite[0].testcase[0].name).toBe('redrive: failed on "first" attempt');
    expect(root.testsuite[0].testcase[0]['system-out']).toBe('last error: HTTP 422 <body> & more');
  });

  it('reports a passing run with no failure element', () => {
    const passing = result();
    passing.scenarios = [passing.scenarios[0]!];
    passing.failed = 0;
    const xml = renderJunit(passing);
    expect(xml).not.toContain('<failure');
    expect(XMLValidator.validate(xml)).toBe(true);
  });
});

describe('GitHub Actions annotations', () => {
  it('emits one ::error per failed step, escaped as the runner expects', () => {
    const lines = githubAnnotations(result());
    expect(lines[0]).toBe(
      '::error title=drill slow-target%3A the effect exists once::the effect exists once failed: user_coupon has 2 rows%0Afor drill-ab12cd34-slow: 50%25 off, <dup> \u0001',
    );
    expect(lines.filter((l) => l.startsWith('::error'))).toHaveLength(1);
    expect(data('a%b\r\nc')).toBe('a%25b%0D%0Ac');
    expect(property('a:b,c')).toBe('a%3Ab%2Cc');
  });

  it('emits nothing for a passing run', () => {
    const passing = result();
    passing.scenarios = [passing.scenarios[0]!];
    passing.failed = 0;
    expect(githubAnnotations(passing)).toEqual([]);
  });
});
