import type { RuleConfig } from '../../config/schema.js';
import { closest } from '../../config/suggest.js';
import { Context } from '../../context.js';
import { normalizeRule, type DiffRule } from '../../core/diff.js';
import { bindSource, type BoundSource } from '../../db/bind-source.js';
import { usageError } from '../../errors.js';
import type { RuleTarget } from './diff.js';

/**
 * Which rules a diff runs and where their tables are. Only the rules asked for are checked, so a
 * broken rule elsewhere in the config does not block them.
 */
export function selectRules(
  configured: readonly RuleConfig[],
  names: readonly string[] | undefined,
): DiffRule[] {
  if (configured.length === 0) {
    throw usageError(
      'no diff rules are configured',
      'Add `rules:` to taskrecon.config.yaml, e.g. { name: coupon-issued, bizType: coupon, business: { table: user_coupon, key: order_id } }.',
    );
  }
  if (!names?.length) return configured.map((r, i) => normalizeRule(r, i));
  return names.map((name) => {
    const index = configured.findIndex((r) => r.name === name);
    if (index < 0) {
      const all = configured.map((r) => r.name);
      const guess = closest(name, all);
      throw usageError(
        `unknown rule '${name}'`,
        `${guess ? `Did you mean '${guess}'? ` : ''}Configured rules: ${all.join(', ')}.`,
      );
    }
    return normalizeRule(configured[index] as RuleConfig, index);
  });
}

/** Opens, per rule, its task source (default: the command's) and its business database; close() closes what it opened. */
export class RuleTargets {
  private readonly contexts: Context[] = [];

  constructor(
    private readonly context: Context,
    private readonly main: BoundSource,
    /** The DSN `main` was opened with (a shard's); default: the command's source's. */
    private readonly mainDsn?: string,
  ) {}

  async open(rule: DiffRule): Promise<RuleTarget> {
    let source = this.main;
    let sourceDsn = this.mainDsn ?? this.context.dsn(this.context.source());
    if (rule.source && rule.source !== this.main.name) {
      const context = new Context({
        ...this.context.input,
        source: rule.source,
        profile: undefined,
        table: undefined,
      });
      this.contexts.push(context);
      const choice = context.source();
      sourceDsn = context.dsn(choice);
      source = await bindSource(await context.open(choice), choice.profile, choice.name);
    }
    let businessDb = source.db;
    if (rule.business.db && rule.business.db !== sourceDsn) {
      businessDb = await this.context.openExtra(rule.business.db);
    }
    return { rule, source, sourceDsn, businessDb };
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.contexts.map((c) => c.close()));
  }
}
