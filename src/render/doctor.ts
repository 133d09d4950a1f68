import type { CheckStatus, DoctorResult, ExplainedQuery } from '../verbs/doctor/index.js';
import { heading, renderTable } from './table.js';
import { hangingIndent } from './fit.js';
import { chalk, printable, tableWidth } from './terminal.js';

const MARK: Record<CheckStatus, string> = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' };
const COLOR: Record<CheckStatus, (s: string) => string> = {
  ok: chalk.green,
  warn: chalk.yellow,
  fail: chalk.red,
};

function planTable(query: ExplainedQuery): string {
  if (query.summary) return query.summary.map((line) => `  ${printable(line, 160)}`).join('\n');
  if (query.plan.length === 0) return '  (no plan rows)';
  const keys = [...new Set(query.plan.flatMap((row) => Object.keys(row)))];
  const rows = query.plan.map((row) =>
    keys.map((k) => (row[k] === null || row[k] === undefined ? null : printable(String(row[k]), 120))),
  );
  return renderTable(keys, rows);
}

/** The human view of doctor: one line per check, its fix hint under it, then the scan plans. */
export function renderDoctor(result: DoctorResult, options: { plans: boolean }): string {
  const out: string[] = [];
  out.push(
    `${chalk.bold('source')} ${result.source.name} (${result.source.profile}, table ${result.source.table}) on ${result.source.db}`,
  );
  out.push('');
  // On a terminal a long message wraps under itself, so the marks and names stay a column; a fix
  // and a statement stay one line each, to be pasted whole.
  const width = tableWidth();
  for (const c of result.checks) {
    out.push(
      hangingIndent(
        `${COLOR[c.status](MARK[c.status])}  ${chalk.bold(c.name.padEnd(18))} `,
        c.message,
        width,
      ),
    );
    if (c.hint && c.status !== 'ok') out.push(`      ${' '.repeat(18)} ${chalk.dim('fix:')} ${c.hint}`);
  }
  const plans = result.checks.flatMap((c) => c.explain ?? []);
  const shown = options.plans
    ? plans
    : plans.filter((p) => p.name === 'due count' || p.name === 'stuck count');
  if (shown.length > 0) {
    out.push('');
    out.push(
      heading(
        options.plans ? 'Plans of the scan queries' : 'Plans of the due and stuck counts (all with --plans)',
      ),
    );
    for (const p of shown) {
      out.push('');
      out.push(
        `${chalk.bold(p.name)}: ${p.fullScan ? chalk.yellow('reads the whole table') : `through ${p.indexes.join(', ') || 'no index'}`}`,
      );
      out.push(
        chalk.dim(
          hangingIndent('  ', `${p.sql.replace(/\s+/g, ' ')}  -- ${JSON.stringify(p.params)}`, width),
        ),
      );
      out.push(planTable(p));
    }
  }
  out.push('');
  const { ok, warn, fail } = result.summary;
  out.push(
    `${COLOR[result.status](result.status === 'ok' ? 'healthy' : result.status === 'warn' ? 'usable, with warnings' : 'problems found')}: ${ok} ok, ${warn} warning${warn === 1 ? '' : 's'}, ${fail} failed`,
  );
  return out.join('\n');
}
