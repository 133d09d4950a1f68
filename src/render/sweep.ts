import type { CreateMissingResult } from '../verbs/diff/index.js';
import type { SecondFailureRow, SweepResult } from '../verbs/sweep/index.js';
import { auditRunCommand } from './paste.js';
import { heading, renderTable } from './table.js';
import { hangingIndent } from './fit.js';
import { chalk, tableWidth } from './terminal.js';

/** How many rows of each kind the text output lists (the JSON lists them all). */
const LISTED = 50;

/** The sweep as a person reads it: the counts, then the rows that need a look (second failures, holds, deferrals). */
export function renderSweep(result: SweepResult): string {
  const verb = result.dryRun ? 'would retry' : 'retried';
  const lines = [
    `${heading('Failure sweep')} ${result.dryRun ? chalk.yellow('(dry run: nothing written)') : ''}`.trim(),
    `now ${result.now}, failures since ${result.since} in ${[...result.sources, ...(result.brokers ?? []).map((b) => `broker ${b}`)].join(', ')}`,
    `${result.matched} matched (${result.unmatched} no rule matched): ${result.retried} ${verb}, ${result.deferred} deferred, ` +
      `${result.held} held, ${result.secondFailures} second failure${result.secondFailures === 1 ? '' : 's'}` +
      (result.lostRace ? `, ${result.lostRace} retried by another run first` : '') +
      (result.refused ? `, ${result.refused} refused` : ''),
  ];
  if (result.effectRefused)
    lines.push(
      chalk.yellow(
        hangingIndent(
          '',
          `${result.effectRefused} not retried: their business effect is already there (diff rules; each audited as effect-refused). Check the rows; --force-effect retries them`,
          tableWidth(),
          2,
        ),
      ),
    );
  const sections: Array<[string, SweepResult['results']]> = [
    ['Second failures (for a person)', result.results.filter((r) => r.outcome === 'second-failure')],
    ['Held (for a person)', result.results.filter((r) => r.outcome === 'held')],
    ['Refused', result.results.filter((r) => r.outcome === 'refused')],
    ['Deferred', result.results.filter((r) => r.outcome === 'deferred')],
  ];
  for (const [title, rows] of sections) {
    if (rows.length === 0) continue;
    lines.push('', heading(title));
    lines.push(
      renderTable(
        [
          { title: 'source', fit: 'whole', drop: 1 },
          { title: 'id', fit: 'whole' },
          'job / biz type',
          { title: 'rule', fit: 'whole', drop: 2 },
          'failed at',
          title === 'Deferred' ? 'eligible at' : 'note',
        ],
        rows
          .slice(0, LISTED)
          .map((r) => [
            r.queue === undefined ? r.source : `${r.source}/${r.queue}`,
            r.shard ? `${r.shard}:${String(r.id)}` : String(r.id),
            r.bizType,
            r.rule,
            r.failedAt,
            title === 'Deferred' ? r.eligibleAt : (r.reason ?? (r.alerted ? 'alerted' : '')),
          ]),
      ),
    );
    if (rows.length > LISTED)
      lines.push(chalk.dim(`… and ${rows.length - LISTED} more (--json lists every row)`));
  }
  for (const n of result.notifications)
    lines.push(
      `${n.outcome === 'sent' ? chalk.green('sent') : chalk.red('failed')} ${n.kind} ${n.target}${n.error ? `: ${n.error}` : ''}`,
    );
  if (!result.dryRun && result.retried + result.alerted > 0)
    lines.push(chalk.dim(`run ${result.runId}: ${auditRunCommand(result.runId)}`));
  return lines.join('\n');
}

/** Whether a person needs to see this sweep (for --quiet). */
export function sweepNeedsAPerson(result: SweepResult): boolean {
  return result.secondFailures > 0 || result.held > 0 || result.refused > 0;
}

/** `scan --second-failures`: the jobs for a person. */
export function renderSecondFailures(rows: SecondFailureRow[]): string {
  if (rows.length === 0) return `\n${heading('Second failures')}\nnone`;
  return [
    '',
    heading(`Second failures (${rows.length})`),
    renderTable(
      [{ title: 'id', fit: 'whole' }, 'job / biz type', { title: 'rule', drop: 1 }, 'identity', 'failed at'],
      rows.map((r) => [String(r.id), r.bizType, r.rule, r.identity, r.failedAt]),
    ),
  ].join('\n');
}

/** The --create-missing part of diff's output. */
export function renderCreateMissing(result: CreateMissingResult): string {
  const verb = result.dryRun ? 'would create' : 'created';
  const count = result.dryRun
    ? result.results.filter((r) => r.outcome === 'would-create').length
    : result.created;
  const lines = [
    '',
    heading('Missing tasks'),
    `${count} ${verb}, ${result.existing} existed already, ${result.refused} refused`,
  ];
  const listed = result.results.filter((r) => r.outcome !== 'exists').slice(0, LISTED);
  if (listed.length)
    lines.push(
      renderTable(
        [
          { title: 'rule', fit: 'whole', drop: 1 },
          { title: 'key', fit: 'whole' },
          { title: 'event id', fit: 'whole' },
          'outcome',
          { title: 'task id', fit: 'whole' },
        ],
        listed.map((r) => [
          r.rule,
          r.key,
          r.eventId,
          r.reason ? `${r.outcome}: ${r.reason}` : r.outcome,
          r.taskId === null ? null : String(r.taskId),
        ]),
      ),
    );
  return lines.join('\n');
}

/** Asks on the terminal before creating tasks; the default is no. */
export async function confirmCreate(count: number): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts');
  return confirm({
    message: `Create ${count} missing task${count === 1 ? '' : 's'} (pending, due now)?`,
    default: false,
  });
}
