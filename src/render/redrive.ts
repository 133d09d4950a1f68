import { formatSeconds } from '../core/duration.js';
import type { RedriveEvent, RedriveResult } from '../verbs/redrive/index.js';
import { renderFields } from './table.js';
import { chalk } from './terminal.js';
import { grouped } from '../core/grouped.js';

const n = grouped;

/** The human summary of one redrive run. */
export function renderRedrive(result: RedriveResult): string {
  const out: string[] = [];
  const title = result.dryRun
    ? chalk.bold('redrive (dry run: nothing claimed or written)')
    : chalk.bold('redrive');
  out.push(`${title} on ${result.source} as of ${result.now}`);
  out.push(
    renderFields([
      [
        result.dryRun ? 'would claim' : 'claimed',
        `${n(result.claimed)} (${n(result.recoveredStuck)} recovered from expired leases)`,
      ],
      ['succeeded', n(result.succeeded)],
      ['delivered', n(result.delivered)],
      ['retried', n(result.retried)],
      ['failed', result.failed > 0 ? chalk.red(n(result.failed)) : n(result.failed)],
      ['lost race', n(result.lostRace)],
      ['released', n(result.released)],
      [
        'lease',
        `${formatSeconds(result.leaseSeconds)} (stuck after ${formatSeconds(result.stuckAfterSeconds)})`,
      ],
      [
        'took',
        `${(result.durationMs / 1000).toFixed(1)}s${result.interrupted ? ' (interrupted: in-flight tasks settled, the rest released)' : ''}`,
      ],
    ]),
  );
  for (const u of result.unhandled) {
    out.push(
      chalk.yellow(
        `unhandled: ${n(u.count)} due or stuck tasks of biz type ${u.bizType ?? '(none)'} have no handler and were left alone`,
      ),
    );
  }
  return out.join('\n');
}

/** One structured log line (`--log-format json`). */
export function eventLine(event: RedriveEvent): string {
  return JSON.stringify({ ts: new Date().toISOString(), ...event });
}
