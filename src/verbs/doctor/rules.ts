import type { RuleConfig } from '../../config/schema.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { Db } from '../../db/types.js';
import { check, type DoctorCheck } from './check.js';
import { ruleIndexes } from '../../ops/rule-indexes.js';

/**
 * The indexes each diff rule on this source reads through. A missing one never makes a
 * diff wrong, only slow, so it is a warning with the DDL that would create it.
 * `openDb` opens a rule's business database when it is not the source's own.
 */
export async function ruleIndexChecks(
  source: BoundSource,
  sourceDsn: string,
  rules: readonly RuleConfig[],
  openDb: (dsn: string) => Promise<Db>,
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  for (const rule of rules) {
    if (rule.source && rule.source !== source.name) continue;
    let businessDb = source.db;
    if (rule.business.db && rule.business.db !== sourceDsn) {
      try {
        businessDb = await openDb(rule.business.db);
      } catch (error) {
        checks.push(
          check(
            'diff rule index',
            'warn',
            `rule ${rule.name}: cannot open its business database to check indexes: ${(error as Error).message}`,
            'Check `business.db` of the rule.',
          ),
        );
        continue;
      }
    }
    for (const need of await ruleIndexes(businessDb, rule, source)) {
      const what = `rule ${rule.name}: ${need.table} (${need.columns.join(', ')}) to ${need.why}`;
      checks.push(
        need.present
          ? check('diff rule index', 'ok', `${what}: ${need.index}`)
          : check(
              'diff rule index',
              'warn',
              `${what}: no index, so diff scans the table`,
              need.suggestion && `${need.suggestion};`,
            ),
      );
    }
  }
  return checks;
}
