import type { Finding } from '../core/diff.js';
import type { DiffResult, ShardDiffEntry } from '../verbs/diff/index.js';
import { heading, renderTable } from './table.js';
import { chalk, writeOut } from './terminal.js';
import { grouped } from '../core/grouped.js';

const KIND_COLOR: Record<Finding['kind'], (s: string) => string> = {
  missing: chalk.red,
  duplicate: chalk.magenta,
  orphan: chalk.yellow,
  unsettled: chalk.cyan,
};

const n = grouped;
const cell = (value: number): string => (value === 0 ? chalk.dim('0') : chalk.bold(n(value)));

/** The human view of a diff: one line per rule, the samples, and what --enqueue did. */
export function renderDiff(result: DiffResult & { shards?: ShardDiffEntry[] }): string {
  const out: string[] = [];
  out.push(
    renderTable(
      [
        { title: 'rule', fit: 'whole' },
        { title: 'biz type', fit: 'tail' },
        { title: 'business table', fit: 'whole', drop: 3 },
        { title: 'expect', drop: 1 },
        { title: 'mode', drop: 2 },
        'tasks checked',
        'missing',
        'duplicate',
        'orphan',
        'unsettled',
      ],
      [
        ...result.rules.map((r) => [
          r.name,
          r.bizType,
          `${r.business.table}.${r.business.key}`,
          r.business.expect,
          r.mode,
          n(r.tasksChecked),
          cell(r.findings.missing),
          cell(r.findings.duplicate),
          cell(r.findings.orphan),
          cell(r.findings.unsettled),
        ]),
        [
          chalk.bold('total'),
          '',
          '',
          '',
          '',
          '',
          cell(result.total.missing),
          cell(result.total.duplicate),
          cell(result.total.orphan),
          cell(result.total.unsettled),
        ],
      ],
    ),
  );
  if (result.shards) out.push('', renderShards(result.shards));
  for (const rule of result.rules) {
    if (rule.samples.length === 0) continue;
    out.push('');
    out.push(heading(`${rule.name}: samples`));
    out.push(
      renderTable(
        [
          { title: 'finding', fit: 'whole' },
          { title: 'task id', fit: 'whole' },
          { title: 'key', fit: 'whole' },
          { title: 'event id', fit: 'whole', drop: 1 },
          { title: 'task status', fit: 'whole' },
          'business rows',
        ],
        rule.samples.map((s) => [
          KIND_COLOR[s.kind](s.kind),
          s.taskId === null ? '' : s.shard ? `${s.shard}:${String(s.taskId)}` : String(s.taskId),
          s.key ?? 'NULL',
          s.eventId ?? '',
          s.status ?? '',
          s.businessRows,
        ]),
      ),
    );
  }
  if (result.enqueue) {
    out.push('');
    const verb = result.enqueue.dryRun ? 'would requeue' : 'requeued';
    out.push(
      `${chalk.bold('enqueue')} ${verb} ${n(result.enqueue.applied)} missing task(s) for redrive (success → pending, due now); ${n(result.enqueue.skipped)} skipped`,
    );
    for (const r of result.enqueue.results.filter((x) => x.detail).slice(0, 10))
      out.push(chalk.dim(`  ${r.id}: ${r.outcome}: ${r.detail}`));
  } else if (result.total.missing > 0) {
    out.push('');
    out.push(
      chalk.dim(
        'Missing effects can be re-driven: run again with --enqueue (audited), then `taskrecon redrive`.',
      ),
    );
  }
  return out.join('\n');
}

/** A sharded diff's shards: each one's own findings (orphans belong to no shard), or why it is left out. */
function renderShards(shards: readonly ShardDiffEntry[]): string {
  return renderTable(
    [{ title: 'shard', fit: 'whole' }, 'tasks checked', 'missing', 'duplicate', 'unsettled'],
    shards.map((s) =>
      s.ok && s.findings
        ? [
            s.name,
            n(s.tasksChecked ?? 0),
            cell(s.findings.missing),
            cell(s.findings.duplicate),
            cell(s.findings.unsettled),
          ]
        : [s.name, chalk.red(`left out: ${s.error ?? 'unreachable'}`), '', '', ''],
    ),
  );
}

export const FINDING_CSV_HEADER = 'rule,kind,taskId,key,bizId,eventId,status,businessRows\n';

/** One finding as an NDJSON line. */
export function findingNdjson(f: Finding): string {
  return `${JSON.stringify(f)}\n`;
}

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One finding as a CSV line, in FINDING_CSV_HEADER order (a sharded run's `shard` last). */
export function findingCsv(f: Finding, sharded = false): string {
  const cells = [f.rule, f.kind, f.taskId, f.key, f.bizId, f.eventId, f.status, f.businessRows];
  return `${(sharded ? [...cells, f.shard] : cells).map(csvCell).join(',')}\n`;
}

/**
 * NDJSON or CSV findings written to stdout as they come, in chunks of about 64 KiB; flush()
 * writes the rest.
 */
export function findingStream(
  format: 'ndjson' | 'csv',
  sharded = false,
): {
  onFinding: (finding: Finding) => Promise<void>;
  flush: () => Promise<void>;
} {
  let streamed =
    format === 'csv' ? (sharded ? `${FINDING_CSV_HEADER.trimEnd()},shard\n` : FINDING_CSV_HEADER) : '';
  return {
    onFinding: async (finding) => {
      streamed += format === 'ndjson' ? findingNdjson(finding) : findingCsv(finding, sharded);
      if (streamed.length > 65_536) {
        // Emptied before the await: findings of another walk may arrive while stdout drains.
        const text = streamed;
        streamed = '';
        await writeOut(text);
      }
    },
    flush: async () => {
      const text = streamed;
      streamed = '';
      await writeOut(text);
    },
  };
}
