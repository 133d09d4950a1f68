import { statusesOfRole, type DiffRule } from '../../core/diff.js';
import {
  combineEffects,
  NO_RULE,
  ruleEffectState,
  type RuleEffect,
  type TaskEffect,
} from '../../core/effect.js';
import type { BoundSource } from '../../db/bind-source.js';
import {
  businessRefs,
  isIntegerType,
  store,
  type BusinessSide,
  type EffectTaskSide,
} from '../../db/port/index.js';
import type { Db, Queryable, Row } from '../../db/types.js';
import { configError } from '../../errors.js';
import { rowField, rowId, rowStatus } from '../rows.js';

/**
 * The effect state of tasks about to be retried, from the diff rules that cover their biz type:
 * per rule and batch of rows, one lookup of the business rows by key and one of the rule's tasks
 * by key (never one statement per task). A rule's business database is opened, and its table
 * checked, the first time a task of its biz type is looked at, so a rule of another biz type
 * never stands in the way.
 */

/** Keys per statement: well inside every engine's bound-parameter limit. */
const KEYS_PER_LOOKUP = 500;

/** Opens a rule's `business.db` (the source's own connection when it names the same server). */
export type BusinessOpener = (dsn: string) => Promise<Db>;

interface Target {
  rule: DiffRule;
  task: EffectTaskSide;
  taskKey: DiffRule['taskKey'];
  business?: { db: Db; side: BusinessSide };
}

export class EffectChecker {
  private readonly targets: Target[];

  constructor(
    private readonly source: BoundSource,
    rules: readonly DiffRule[],
    private readonly openBusiness: BusinessOpener,
  ) {
    const { sql } = source;
    const bizType = sql.expr('bizType');
    this.targets = rules.flatMap((rule) => {
      const key = sql.expr(rule.taskKey);
      // A rule of another source, or one this table cannot be matched by, covers none of its tasks.
      if ((rule.source && rule.source !== source.name) || !bizType || !key) return [];
      const done = sql.statusIn(statusesOfRole('done', rule.taskStatus));
      return [
        {
          rule,
          taskKey: rule.taskKey,
          task: { table: sql.table, bizType, bizTypeValue: rule.bizType, key, done },
        },
      ];
    });
  }

  /** Whether any rule could cover a task of this source. */
  get hasRules(): boolean {
    return this.targets.length > 0;
  }

  /**
   * The effect of each row (by task id as text). `q`: the connection the task rows were read on (a
   * transaction), used for the task lookups and for business tables on the same server.
   */
  async check(rows: readonly Row[], q?: Queryable): Promise<Map<string, TaskEffect>> {
    const { sql } = this.source;
    const out = new Map<string, TaskEffect>();
    const found = new Map<string, RuleEffect[]>();
    for (const row of rows) found.set(String(rowId(sql, row)), []);
    for (const target of this.targets) {
      const mine = rows.filter((r) => rowField(sql, r, 'bizType') === target.rule.bizType);
      if (mine.length === 0) continue;
      const business = await this.businessOf(target);
      const keys = [
        ...new Set(mine.map((r) => rowField(sql, r, target.taskKey)).filter((k): k is string => k !== null)),
      ];
      const rowsByKey = new Map<string, number>();
      const tasksByKey = new Map<string, { tasks: number; done: number }>();
      const sameDb = business.db === this.source.db;
      for (let i = 0; i < keys.length; i += KEYS_PER_LOOKUP) {
        const chunk = keys.slice(i, i + KEYS_PER_LOOKUP);
        const counted = await store.diff.businessRowCounts(
          sameDb && q ? q : business.db,
          business.side,
          chunk,
        );
        for (const c of counted) rowsByKey.set(String(c.k), Number(c.n));
        // Only a key with business rows needs its tasks counted (no row: missing, whatever they are).
        const withRows = chunk.filter((k) => rowsByKey.has(k));
        for (const t of await store.diff.taskKeyCounts(q ?? this.source.db, target.task, withRows))
          tasksByKey.set(String(t.k), { tasks: Number(t.tasks), done: Number(t.done) });
      }
      for (const row of mine) {
        const value = rowField(sql, row, target.taskKey);
        const facts = {
          rows: value === null ? 0 : (rowsByKey.get(value) ?? 0),
          tasks: Math.max(1, (value === null ? undefined : tasksByKey.get(value)?.tasks) ?? 1),
          doneTasks: (value === null ? undefined : tasksByKey.get(value)?.done) ?? 0,
        };
        found.get(String(rowId(sql, row)))?.push({
          rule: target.rule.name,
          table: target.rule.business.table,
          key: target.rule.business.key,
          value,
          rows: facts.rows,
          state: ruleEffectState(rowStatus(sql, row), facts, target.rule),
        });
      }
    }
    for (const [id, effects] of found) out.set(id, effects.length ? combineEffects(effects) : NO_RULE);
    return out;
  }

  /** The rule's business table, opened and checked once (exit 3 naming the rule when it cannot be read). */
  private async businessOf(target: Target): Promise<NonNullable<Target['business']>> {
    if (target.business) return target.business;
    const { rule } = target;
    const db = rule.business.db ? await this.openBusiness(rule.business.db) : this.source.db;
    const columns = await db.columns(rule.business.table);
    const key = columns?.find((c) => c.name.toLowerCase() === rule.business.key.toLowerCase());
    if (!columns || !key) {
      throw configError(
        `rule '${rule.name}': cannot look up effects: ${columns ? `business table '${rule.business.table}' has no column '${rule.business.key}'` : `business table '${rule.business.table}' does not exist in ${db.display}`}; nothing was changed`,
        `Fix the rule: \`taskrecon diff --rule ${rule.name}\` checks it.`,
      );
    }
    const refs = businessRefs(db.dialect, rule.business.table, key.name);
    target.business = {
      db,
      side: {
        table: refs.table,
        key: refs.key,
        keyIsInt: isIntegerType(key.dataType),
        ...(rule.business.where ? { where: rule.business.where } : {}),
      },
    };
    return target.business;
  }
}
