import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { TaskreconConfig } from '../../config/schema.js';
import type { LogicalStatus } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { ExitCode, usageError, type ExitCodeValue } from '../../errors.js';
import { resolveTime } from '../../flags.js';
import { defaultOperator } from '../../ops/operator.js';
import { errorAndQueueFilter } from '../../ops/text-filters.js';
import { effectGate, type EffectSetup } from '../../ops/effect/index.js';
import { parseIdArgs } from './id-args.js';
import { checkDispatchable } from './now.js';
import { COMPENSATE_ACTIONS, type CompensateAction } from '../../core/compensate-plan.js';
import { parseRate } from '../../core/pacer.js';
import type { CompensateRequest, CompensateResult } from '../../ops/compensation/types.js';

/** The flags of `compensate`, as the command parsed them. */
export interface CompensateFlags {
  action?: string;
  status?: string[];
  'biz-type'?: string[];
  since?: TimeInput;
  until?: TimeInput;
  'error-like'?: string;
  queue?: string[];
  operator?: string;
  reason?: string;
  'dry-run'?: boolean;
  now?: boolean;
  'force-effect'?: boolean;
  yes?: boolean;
  limit: number;
  rate?: string;
  batch: number;
}

type TimeInput = { ago: number } | { epoch: number };

const FILTER_FLAGS = ['status', 'biz-type', 'since', 'until', 'error-like', 'queue'] as const;

export interface CompensateInput {
  flags: CompensateFlags;
  /** The positional arguments: ids and id ranges LO-HI, space or comma separated. */
  argv: string[];
  config: TaskreconConfig;
  /** The source's `queue.connections` (failed-job tables re-push onto them). */
  queueConnections: CompensateRequest['queueConnections'];
  /** --json was given (a picker never opens then). */
  json: boolean;
  /** stdin and stdout are a terminal. */
  tty: boolean;
  /** The diff rules and databases a retry's effect check reads (absent: no check). */
  effects?: EffectSetup;
}

export interface CompensatePlan {
  request: CompensateRequest;
  /** Open the picker (a terminal, no --yes, no --dry-run, no --json). */
  interactive: boolean;
  reasonRequired: boolean;
}

/**
 * The flag-combination rules of `compensate` and the request they make: ids or filters, a
 * confirmation (--yes, --dry-run or a terminal), --now only with --action retry and never with
 * --dry-run, a reason when the config requires one. Throws a usage error (exit 3) naming the flag.
 */
export async function compensateRequest(
  source: BoundSource,
  input: CompensateInput,
): Promise<CompensatePlan> {
  const { flags } = input;
  const { ids, ranges } = parseIdArgs(source, input.argv);
  const filtersGiven = FILTER_FLAGS.filter((f) => flags[f] !== undefined);
  if (ids.length && !ranges.length && filtersGiven.length) {
    throw usageError(
      `give task ids or filters, not both (got ids and --${filtersGiven.join(', --')})`,
      'Filters select tasks when no ids are given, and narrow id ranges (LO-HI).',
    );
  }
  const rate = flags.rate === undefined ? undefined : parseRate(flags.rate);
  if (flags.rate !== undefined && rate === undefined)
    throw usageError(`--rate: '${flags.rate}' is not a rate`, 'Write e.g. 200/s, 50 or 6000/m.');
  const nowEpoch = await source.db.nowEpoch();
  const interactive = !flags.yes && !flags['dry-run'] && !input.json && input.tty;
  if (!flags.yes && !flags['dry-run'] && !interactive) {
    throw usageError(
      'refusing to change tasks without a confirmation: this is not a terminal',
      'Pass --yes to act on every match, or --dry-run to see what would change.',
    );
  }
  if (!flags.action && !interactive)
    throw usageError('--action is required', `One of: ${COMPENSATE_ACTIONS.join(', ')}.`);
  if (flags.now) {
    if (flags.action !== 'retry')
      throw usageError(
        '--now goes with --action retry',
        'It runs the tasks a retry has just sent back to pending.',
      );
    if (flags['dry-run'])
      throw usageError('--now and --dry-run exclude each other: a dry run changes and runs nothing');
    checkDispatchable(source, input.config);
  }
  if (flags['force-effect'] && flags.action && flags.action !== 'retry')
    throw usageError(
      '--force-effect goes with --action retry',
      'It retries tasks whose business effect is already there; other actions do not run the task again.',
    );
  const reasonRequired = input.config.compensate?.requireReason === true;
  if (reasonRequired && !interactive && !flags['dry-run'] && !flags.reason?.trim()) {
    throw usageError(
      '--reason is required: the config sets compensate.requireReason',
      'Say why, e.g. --reason "refund issued by hand, ticket OPS-123".',
    );
  }
  const request: CompensateRequest = {
    action: (flags.action ?? 'retry') as CompensateAction,
    operator: flags.operator ?? defaultOperator(process.env, input.config.operator),
    host: hostname(),
    reason: flags.reason?.trim() || null,
    dryRun: Boolean(flags['dry-run']),
    runId: randomUUID(),
    // With a range the arguments select like a filter (in the action's movable statuses, --limit applies).
    ids: ids.length && !ranges.length ? ids : undefined,
    statuses: flags.status as LogicalStatus[] | undefined,
    filter: {
      bizTypes: flags['biz-type'],
      sinceEpoch: resolveTime(flags.since, nowEpoch),
      untilEpoch: resolveTime(flags.until, nowEpoch),
      ...errorAndQueueFilter(source, flags),
      ...(ranges.length ? { idRanges: { ranges, ids } } : {}),
    },
    limit: flags.limit,
    rate,
    batchSize: flags.batch,
    queueConnections: input.queueConnections,
    ...(input.effects ? { effects: effectGate(source, input.effects, Boolean(flags['force-effect'])) } : {}),
  };
  return { request, interactive, reasonRequired };
}

/**
 * The exit of a finished run, and what to say on stderr: named tasks that cannot take the action
 * change nothing (exit 3); refused matches of a filter, or an interrupted run, are findings (1).
 */
export function compensateOutcome(
  request: Pick<CompensateRequest, 'action' | 'ids' | 'skipEffectRefusals'>,
  result: CompensateResult,
): { exit: ExitCodeValue; message?: string } {
  if (result.refused > (request.skipEffectRefusals ? (result.effect?.refused ?? 0) : 0) && request.ids)
    return {
      exit: ExitCode.couldNotRun,
      message: `nothing was changed: ${result.refused} of the named tasks cannot take ${request.action} (see the reasons above)${result.effect?.refused ? `; ${result.effect.refused} because their effect is already there: check the business rows, then pass --force-effect to retry anyway` : ''}`,
    };
  if (result.wouldFail)
    return {
      exit: ExitCode.findings,
      message: `${result.wouldFail} of the jobs would fail: their queue target cannot take them now (see the reasons above)`,
    };
  if (result.refused > 0 || result.interrupted) return { exit: ExitCode.findings };
  return { exit: ExitCode.ok };
}
