import type { RuleConfig } from '../../config/schema.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { Db } from '../../db/types.js';
import { usageError, configError } from '../../errors.js';
import { closest } from '../../config/suggest.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import type { SystemTarget } from './drill.js';

/**
 * Real-system mode: checks that the configured source can carry drill rows and resolves the diff
 * rule whose business table the drill counts effects in. Problems are usage errors (exit 3,
 * nothing written).
 */
const NEEDED = ['id', 'bizType', 'eventId', 'payload', 'attempts', 'nextRetryAt', 'updatedAt'] as const;

export function requireDrillableSource(source: BoundSource): void {
  const missing = NEEDED.filter((f) => !source.sql.has(f));
  if (missing.length > 0 || source.profile.status.kind !== 'column') {
    throw usageError(
      `source ${source.name} (profile ${source.profile.name}) cannot carry drill tasks: it has no ${missing.length ? missing.join(', ') : 'status column'}`,
      'Drill a task table with a status column, event id, attempts, next retry and updated times (async-task, job-retries or a custom profile).',
    );
  }
}

export function findRule(rules: RuleConfig[] | undefined, name: string | undefined): RuleConfig {
  const names = (rules ?? []).map((r) => r.name);
  if (!name) {
    throw usageError(
      '--handler-url needs --diff-rule: the rule names the business table and key the drill counts effects in',
      names.length
        ? `Configured rules: ${names.join(', ')}.`
        : 'Add a rule under `rules:` in taskrecon.config.yaml (see `diff`).',
    );
  }
  const rule = rules?.find((r) => r.name === name);
  if (!rule) {
    const guess = closest(name, names);
    throw usageError(
      `unknown diff rule '${name}'`,
      names.length
        ? `${guess ? `Did you mean '${guess}'? ` : ''}Configured rules: ${names.join(', ')}.`
        : 'No rules are configured.',
    );
  }
  if (rule.business.where?.includes(';'))
    throw configError(`rule ${rule.name}: business.where may not contain ';'`);
  if (rule.taskKey && rule.taskKey !== 'bizId') {
    throw usageError(
      `rule ${rule.name} keys business rows by ${rule.taskKey}; drills key them by bizId`,
      'Use a rule with taskKey: bizId (the default).',
    );
  }
  return rule;
}

export function checkHandlerUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`--handler-url '${text}' is not a URL`, 'Write it as http://host:port/path.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw usageError(`--handler-url must be http or https, not ${url.protocol}`);
  return url.toString();
}

/** The system target; opens the rule's business database through `openExtra` when it names one. */
export async function systemTarget(
  source: BoundSource,
  rule: RuleConfig,
  handlerUrl: string,
  leaseMs: number,
  openExtra: (dsn: string) => Promise<Db>,
): Promise<{ target: SystemTarget }> {
  requireDrillableSource(source);
  // unreachable-target compensates by hand, and a manual change that cannot be audited is not made.
  await requireAuditTable(source.db);
  const effectDb = rule.business.db ? await openExtra(rule.business.db) : source.db;
  const columns = await effectDb.columns(rule.business.table);
  if (!columns)
    throw usageError(
      `rule ${rule.name}: business table '${rule.business.table}' does not exist in ${effectDb.display}`,
    );
  if (!columns.some((c) => c.name.toLowerCase() === rule.business.key.toLowerCase())) {
    throw usageError(
      `rule ${rule.name}: business table '${rule.business.table}' has no column '${rule.business.key}'`,
    );
  }
  return {
    target: {
      source,
      handlerUrl,
      bizType: rule.bizType,
      effect: {
        table: rule.business.table,
        key: rule.business.key,
        where: rule.business.where,
        db: rule.business.db,
      },
      effectDb,
      leaseMs,
    },
  };
}
