import type { RuleSpec } from '../../core/config-types.js';
import { normalizeRule } from '../../core/diff.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { Db } from '../../db/types.js';
import type { EffectGate } from '../compensation/types.js';
import { EffectChecker, type BusinessOpener } from './checker.js';

export { EffectChecker, type BusinessOpener } from './checker.js';

/** Where a retry's effect lookups go: the configured diff rules and how to open their business databases. */
export interface EffectSetup {
  rules: readonly RuleSpec[] | undefined;
  /** The DSN the task source was opened with: a `business.db` equal to it is the source's own connection. */
  sourceDsn: string;
  /** Opens another database (closed with the command's context). */
  openExtra: (dsn: string) => Promise<Db>;
}

/** The effect checker of a source over the configured diff rules (none configured: every task is `no-rule`). */
export function effectChecker(source: BoundSource, setup: EffectSetup): EffectChecker {
  const open: BusinessOpener = (dsn) =>
    dsn === setup.sourceDsn ? Promise.resolve(source.db) : setup.openExtra(dsn);
  return new EffectChecker(
    source,
    (setup.rules ?? []).map((r, i) => normalizeRule(r, i)),
    open,
  );
}

/**
 * The effect gate of a retry on this source; `force` retries tasks whose effect is there (audited).
 * Undefined when no diff rule could cover a task of the source: nothing to check, and a run's JSON
 * stays as it was.
 */
export function effectGate(source: BoundSource, setup: EffectSetup, force: boolean): EffectGate | undefined {
  const checker = effectChecker(source, setup);
  if (!checker.hasRules) return undefined;
  return { check: (rows, q) => checker.check(rows, q), force };
}
