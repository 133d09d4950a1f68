import type { TaskreconConfig } from '../../config/schema.js';
import type { BoundSource } from '../../db/bind-source.js';
import { parseDuration } from '../../core/duration.js';
import { DEFAULT_NOTIFY_COOLDOWN_SECONDS } from '../../core/report-cooldown.js';
import { resolveThresholds, type Thresholds } from '../../core/thresholds.js';
import { usageError } from '../../errors.js';
import { checkOutputPath } from '../../files.js';
import { resolveTargets } from '../../notify/targets.js';
import type { NotifyTarget } from '../../notify/types.js';

/** The report window when neither --window nor report.window says: the last hour. */
export const DEFAULT_WINDOW = '1h';

export interface ReportRequestFlags {
  window?: number;
  threshold?: string[];
  notify?: boolean;
  webhook?: string[];
  'notify-cooldown'?: number;
  'notify-timeout'?: number;
  output?: string;
}

export interface ReportRequest {
  thresholds: Thresholds;
  windowMs: number;
  targets: NotifyTarget[];
  cooldownSeconds: number;
  /** The checked --output path. */
  output?: string;
}

/**
 * Every input of `report`, checked before the database is touched: thresholds, the window (≥ 1s),
 * the webhooks (--notify needs one), the cooldown and the --output directory.
 */
export function reportRequest(
  flags: ReportRequestFlags,
  config: NonNullable<TaskreconConfig['report']>,
  failedJobs: boolean,
): ReportRequest {
  const thresholds = resolveThresholds(config.thresholds, flags.threshold, { failedJobs });
  const windowMs = flags.window ?? parseDuration(config.window ?? DEFAULT_WINDOW, 'report.window');
  if (windowMs < 1000) throw usageError('--window must be at least 1s');
  const notify = flags.notify || (flags.webhook?.length ?? 0) > 0;
  const targets = notify
    ? resolveTargets(flags.notify ? (config.notify ?? []) : [], flags.webhook ?? [], {
        timeoutMs: flags['notify-timeout'],
      })
    : [];
  if (flags.notify && targets.length === 0)
    throw usageError(
      '--notify: no webhook is configured',
      'Add `report.notify: [{kind, url}]` to the config, or pass --webhook KIND=URL.',
    );
  const cooldownSeconds =
    flags['notify-cooldown'] !== undefined
      ? flags['notify-cooldown'] / 1000
      : config.notifyCooldown !== undefined
        ? parseDuration(config.notifyCooldown, 'report.notifyCooldown') / 1000
        : DEFAULT_NOTIFY_COOLDOWN_SECONDS;
  const output = flags.output ? checkOutputPath(flags.output) : undefined;
  return { thresholds, windowMs, targets, cooldownSeconds, ...(output ? { output } : {}) };
}

/** --biz-type needs a biz type column in the source's profile. */
export function checkReportSource(source: BoundSource, bizTypes: string[] | undefined): void {
  if ((bizTypes?.length ?? 0) > 0 && !source.sql.has('bizType'))
    throw usageError(`--biz-type needs a biz type, and profile ${source.profile.name} has none`);
}
