import type { CompensateResult } from '../verbs/compensate/index.js';
import { auditRunCommand } from './paste.js';
import { colorStatus } from './scan.js';
import { renderTable } from './table.js';
import { chalk, isStderrTty, oneLine } from './terminal.js';

/** On a terminal, at most this many result rows are listed (the audit log has every change). */
const SHOWN_ROWS = 50;

const OUTCOME_COLOR: Record<string, (s: string) => string> = {
  applied: chalk.green,
  'would-apply': chalk.cyan,
  'would-fail': chalk.red,
  already: chalk.dim,
  'lost-race': chalk.yellow,
  refused: chalk.red,
  skipped: chalk.yellow,
};

/** The human view of a compensate run: one summary line, then the rows and why any were not changed. */
export function renderCompensate(result: CompensateResult): string {
  const out: string[] = [];
  const verb = result.dryRun ? 'would change' : 'changed';
  const changed = result.dryRun
    ? result.results.filter((r) => r.outcome === 'would-apply').length + result.resultsOmitted
    : result.applied;
  out.push(
    `${chalk.bold(result.action)} on ${result.source.name} (${result.source.table}): ${result.matched.toLocaleString('en-US')} matched, ` +
      `${verb} ${changed.toLocaleString('en-US')}, skipped ${result.skipped.toLocaleString('en-US')}` +
      `${result.refused ? `, refused ${chalk.red(result.refused.toLocaleString('en-US'))}` : ''}` +
      `${result.wouldFail ? `, would fail ${chalk.red(result.wouldFail.toLocaleString('en-US'))}` : ''}` +
      `${result.dryRun ? chalk.cyan(' (dry run: nothing written)') : ''}`,
  );
  if (result.results.length > 0) {
    const rows = result.results
      .slice(0, SHOWN_ROWS)
      .map((r) => [
        String(r.id),
        r.from ? colorStatus(r.from) : '—',
        r.to ? colorStatus(r.to) : '—',
        (OUTCOME_COLOR[r.outcome] ?? String)(r.outcome),
        oneLine(r.reason ?? '', 100),
      ]);
    out.push(renderTable([{ title: 'id', fit: 'whole' }, 'from', 'to', 'outcome', 'why'], rows));
    const more = result.results.length - SHOWN_ROWS + result.resultsOmitted;
    if (more > 0)
      out.push(
        chalk.dim(
          `… ${more.toLocaleString('en-US')} more (--json lists up to 1,000; \`${auditRunCommand(result.runId)}\` every change)`,
        ),
      );
  }
  if (result.dispatched) {
    const d = result.dispatched;
    out.push(
      `run at once (--now): ${d.claimed} claimed, ${chalk.green(String(d.succeeded))} succeeded, ${d.retried} to retry later, ` +
        `${d.failed ? chalk.red(String(d.failed)) : '0'} failed${d.lostRace ? `, ${d.lostRace} taken by another worker` : ''}`,
    );
  }
  if (!result.dryRun && result.applied > 0)
    out.push(
      chalk.dim(`audited as run ${result.runId} by ${result.operator}: ${auditRunCommand(result.runId)}`),
    );
  if (result.interrupted)
    out.push(
      chalk.yellow(
        'interrupted: the batch in hand was finished; run the same command again to continue (done rows are not selected again)',
      ),
    );
  return out.join('\n');
}

export interface BarProgress {
  update(done: number, total: number, applied: number): void;
  stop(): void;
}

/** A progress bar on stderr (TTY only): done/total, percent, rows per second. */
export function startBar(label: string, enabled = true): BarProgress {
  if (!enabled || !isStderrTty()) return { update() {}, stop() {} };
  const started = Date.now();
  let shown = false;
  return {
    update(done, total, applied) {
      const width = 28;
      const ratio = total > 0 ? Math.min(1, done / total) : 1;
      const filled = Math.round(ratio * width);
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      shown = true;
      process.stderr.write(
        `\r\x1b[2K${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')} ` +
          `${Math.floor(ratio * 100)}% · ${applied.toLocaleString('en-US')} changed · ${Math.round(done / seconds).toLocaleString('en-US')}/s`,
      );
    },
    stop() {
      if (shown) process.stderr.write('\r\x1b[2K');
    },
  };
}
