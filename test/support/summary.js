// Prints the plain closing line CI reads, from vitest's own JSON report.
import { existsSync, readFileSync } from 'node:fs';

const file = process.argv[2] ?? 'test-results/vitest.json';
if (!existsSync(file)) {
  console.log('0 passed, 1 failed');
  process.exit(0);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const failedSuites = (report.testResults ?? []).filter(
  (r) => r.status === 'failed' && (r.assertionResults ?? []).length === 0,
).length;
console.log(`${report.numPassedTests} passed, ${report.numFailedTests + failedSuites} failed`);
