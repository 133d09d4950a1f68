import { randomUUID } from 'node:crypto';
import type { Context } from '../../context.js';
import type { Finding } from '../../core/diff.js';
import type { BoundSource } from '../../db/bind-source.js';
import { resolveTime } from '../../flags.js';
import { CreateMissingSession, withCollector, type CreateMissingResult } from './create-missing.js';
import { prepareRules, runDiff, type DiffResult, type RuleTarget } from './diff.js';
import { confirmEnqueue, enqueueDeclined } from './enqueue-confirm.js';
import type { WalkChoice } from './prepare.js';
import { defaultOperator } from '../../ops/operator.js';
import { checkDiffFlags, diffActor, enqueueRequest, type DiffWriteFlags } from './request.js';
import { RuleTargets, selectRules } from './targets.js';

type TimeInput = Parameters<typeof resolveTime>[0];

export interface DiffRunFlags extends DiffWriteFlags {
  rule?: string[];
  since?: TimeInput;
  until?: TimeInput;
  walk?: string;
  'chunk-time': number;
  samples: number;
  yes?: boolean;
}

/** A whole `diff` run as the command and the console ask for it; every person-facing step is a hook. */
export interface DiffRun {
  context: Context;
  flags: DiffRunFlags;
  /** Opens the command's task source (after the flags and rules are checked). */
  openSource: () => Promise<BoundSource>;
  /** A person can be asked (a terminal): --enqueue and --create-missing ask before they write. */
  interactive: boolean;
  /** Asks a yes/no question (--enqueue's confirmation). */
  ask: (message: string) => Promise<boolean>;
  /** Asks whether to create this many missing tasks; undefined creates without asking. */
  confirmCreate?: (count: number) => Promise<boolean>;
  /** Starts the progress shown while the rules are walked; stopped when the walk ends. */
  progress?: () => { update(text: string): void; stop(): void };
  onWarning?: (message: string) => void;
  onFinding?: (finding: Finding) => void | Promise<void>;
  /** Told the diff's result once every rule is walked, before --create-missing writes. */
  onDiff?: (result: DiffResult) => void | Promise<void>;
}

export type DiffRunResult = DiffResult & { createMissing?: CreateMissingResult };

/**
 * `diff`: checks the flags and rules, opens each rule's tables, walks them (with --enqueue,
 * missing tasks go back to pending), then with --create-missing creates the tasks of the orphans.
 */
export async function reconcile(run: DiffRun): Promise<DiffRunResult> {
  const flags = {
    ...run.flags,
    operator: run.flags.operator ?? defaultOperator(run.context.env, run.context.config.operator),
  };
  checkDiffFlags(flags);
  const rules = selectRules(run.context.config.rules ?? [], flags.rule);
  const main = await run.openSource();
  const nowEpoch = await main.db.nowEpoch();
  const opener = new RuleTargets(run.context, main);
  try {
    const targets: RuleTarget[] = [];
    for (const rule of rules) targets.push(await opener.open(rule));
    const sinceEpoch = resolveTime(flags.since, nowEpoch);
    const untilEpoch = resolveTime(flags.until, nowEpoch);
    const walk = flags.walk as WalkChoice;
    const prepared = await prepareRules(targets, { sinceEpoch, untilEpoch, walk });
    if (!(await confirmEnqueue(flags, run.interactive, run.ask))) throw enqueueDeclined();
    const creating = flags['create-missing']
      ? await CreateMissingSession.open(targets, run.context.config.rules ?? [], {
          dryRun: Boolean(flags['dry-run']),
          yes: Boolean(flags.yes),
          interactive: run.interactive,
        })
      : undefined;
    const progress = run.progress?.();
    const result = await runDiff(prepared, {
      sinceEpoch,
      untilEpoch,
      chunkTimeMs: flags['chunk-time'],
      samplesPerKind: flags.samples,
      progress: progress ? (text) => progress.update(text) : undefined,
      onWarning: run.onWarning,
      onFinding: withCollector(creating?.collect, run.onFinding),
      enqueue: enqueueRequest(flags),
    }).finally(() => progress?.stop());
    await run.onDiff?.(result);
    if (!creating) return result;
    const createMissing = await creating.run(
      { ...diffActor(flags, null), runId: randomUUID() },
      flags.yes ? undefined : run.confirmCreate,
    );
    return { ...result, createMissing };
  } finally {
    await opener.close();
  }
}
