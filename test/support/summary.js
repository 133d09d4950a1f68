// Prints the plain closing line CI reads, from vitest's own JSON report:
//   node test/support/summary.js [REPORT]              "N passed, N failed"
//   node test/support/summary.js --failures [REPORT]   one line per failed test or file (file, test
//                                                      name, the first line of its error), so the
//                                                      last lines of a CI log say what failed
import { existsSync, readFileSync } from 'node:fs';

const failuresOnly = process.argv[2] === '--failures';
const file = process.argv[failuresOnly ? 3 : 2] ?? 'test-results/vitest.json';
if (!existsSync(file)) {
  console.log(failuresOnly ? `no report at ${file}` : '0 passed, 1 failed');
  process.exit(0);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const suites = report.testResults ?? [];
const failedSuites = suites.filter((r) => r.status === 'failed' && (r.assertionResults ?? []).length === 0);

if (!failuresOnly) {
  console.log(`${report.numPassedTests} passed, ${report.numFailedTests + failedSuites.length} failed`);
  process.exit(0);
}

const firstLine = (messages) =>
  String((messages ?? [])[0] ?? '')
    .split('\n')
    .find((line) => line.trim() !== '')
    ?.trim()
    .slice(0, 200) ?? '';
for (const suite of suites) {
  const name = String(suite.name ?? '');
  const where = /test\/(?:unit|integration)\/.*$/.exec(name)?.[0] ?? name;
  if (failedSuites.includes(suite)) console.log(`failed: ${where}: ${firstLine([suite.message])}`);
  for (const test of suite.assertionResults ?? []) {
    if (test.status !== 'failed') continue;
    console.log(`failed: ${where} › ${test.fullName}: ${firstLine(test.failureMessages)}`);
  }
}
