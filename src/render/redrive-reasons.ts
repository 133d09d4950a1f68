import type { ErrorReason } from '../verbs/redrive/index.js';
import { chalk, printable } from './terminal.js';

/** Why tasks were retried or failed in a redrive run: the top error reasons with their counts. */
export function renderReasons(reasons: ErrorReason[], total: number): string {
  if (reasons.length === 0) return '';
  const lines = [chalk.bold(`why ${total} attempt${total === 1 ? '' : 's'} did not succeed`)];
  for (const r of reasons) lines.push(`  ${String(r.count).padStart(6)}  ${printable(r.reason)}`);
  const shown = reasons.reduce((sum, r) => sum + r.count, 0);
  if (shown < total) lines.push(`  ${String(total - shown).padStart(6)}  (other reasons)`);
  return lines.join('\n');
}
