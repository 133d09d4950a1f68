import type { CompensateResult } from '../verbs/compensate/index.js';
import { auditRunCommand } from './paste.js';
import { colorStatus } from './scan.js';
import { renderTable } from './table.js';
import { hangingIndent } from './fit.js';
import { chalk, isStderrTty, oneLine, tableWidth } from './terminal.js';
import { grouped } from '../core/grouped.js';

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

const EFFECT_COLOR: Record<string, (s: string) => string> = {
  present: chalk.red,
  duplicated: chalk.red,
  missing: chalk.green,
  'no-rule': chalk.dim,
};

function colorEffect(state: string | undefined): string {
  return state ? (EFFECT_COLOR[state] ?? String)(state) : '—';
}

/** The effect check's line, and the tasks it kept from a retry (or let through with --force-effect). */
export function renderEffectSummary(e: NonNullable<CompensateResult['effect']>, dryRun: boolean): string[] {
  // On a terminal each line wraps under itself; piped, one line each.
  const width = tableWidth();
  const wrap = (text: string) => hangingIndent('', text, width, 2);
  const out = [
    wrap(
      `effect (diff rules): ${e.missing} missing, ${e.present} present, ${e.duplicated} duplicated, ${e.noRule} no rule`,
    ),
  ];
  if (e.refused > 0) {
    const ids = e.refusedIds.map(String).join(', ');
    out.push(
      chalk.yellow(
        wrap(
          `not retried, effect already there (${grouped(e.refused)}${dryRun ? '' : ', each audited as effect-refused'}): ${ids}${e.refused > e.refusedIds.length ? ' …' : ''}`,
        ),
      ),
      chalk.dim(
        wrap(
          'check their business rows (`taskrecon show ID`); to retry them anyway add --force-effect (audited)',
        ),
      ),
    );
  }
  if (e.forced > 0)
    out.push(
      chalk.red(
        wrap(
          `retried although the effect is there (--force-effect): ${grouped(e.forced)}, each audited as effect-forced`,
        ),
      ),
    );
  return out;
}

/** The human view of a compensate run: one summary line, then the rows and why any were not changed. */
export function renderCompensate(result: CompensateResult): string {
  const out: string[] = [];
  const verb = result.dryRun ? 'would change' : 'changed';
  const changed = result.dryRun
    ? result.results.filter((r) => r.outcome === 'would-apply').length + result.resultsOmitted
    : result.applied;
  out.push(
    `${chalk.bold(result.action)} on ${result.source.name} (${result.source.table}): ${grouped(result.matched)} matched, ` +
      `${verb} ${grouped(changed)}, skipped ${grouped(result.skipped)}` +
      `${result.refused ? `, refused ${chalk.red(grouped(result.refused))}` : ''}` +
      `${result.wouldFail ? `, would fail ${chalk.red(grouped(result.wouldFail))}` : ''}` +
      `${result.dryRun ? chalk.cyan(' (dry run: nothing written)') : ''}`,
  );
  if (result.results.length > 0) {
    const withEffect = result.effect !== undefined;
    const rows = result.results
      .slice(0, SHOWN_ROWS)
      .map((r) => [
        String(r.id),
        r.from ? colorStatus(r.from) : '—',
        r.to ? colorStatus(r.to) : '—',
        ...(withEffect ? [colorEffect(r.effect?.state)] : []),
        (OUTCOME_COLOR[r.outcome] ?? String)(r.outcome),
        oneLine(r.reason ?? '', 100),
      ]);
    out.push(
      renderTable(
        [{ title: 'id', fit: 'whole' }, 'from', 'to', ...(withEffect ? ['effect'] : []), 'outcome', 'why'],
        rows,
      ),
    );
    const more = result.results.length - SHOWN_ROWS + result.resultsOmitted;
    if (more > 0)
      out.push(
        chalk.dim(
          `… ${grouped(more)} more (--json lists up to 1,000; \`${auditRunCommand(result.runId)}\` every change)`,
        ),
      );
  }
  if (result.effect) out.push(...renderEffectSummary(result.effect, result.dryRun));
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
        `\r\x1b[2K${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${grouped(done)}/${grouped(total)} ` +
          `${Math.floor(ratio * 100)}% · ${grouped(applied)} changed · ${grouped(Math.round(done / seconds))}/s`,
      );
    },
    stop() {
      if (shown) process.stderr.write('\r\x1b[2K');
    },
  };
}
