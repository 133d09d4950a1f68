import type { DiffRule } from '../../core/diff.js';
import type { KeySemantics } from '../../core/diff-keys.js';
import type { BoundSource } from '../../db/bind-source.js';
import type {
  CrossBusinessSide,
  CrossTaskSide,
  NullKeyTaskSide,
  BusinessSide,
  TaskSide,
} from '../../db/port/index.js';
import type { Db } from '../../db/types.js';

/**
 * How one rule is diffed, decided once by prepareRule: which strategy compares its tables and,
 * for that strategy only, the SQL expressions of each side. Every plan has the rule, the bound
 * task source, the business table's database and the warnings found while preparing.
 */
export type DiffPlan = JoinPlan | MergePlan | ChecksumPlan;

/** The strategies that read both tables on one server: the task walk is theirs alike. */
export type SameServerPlan = JoinPlan | MergePlan;

export interface PlanBase {
  rule: DiffRule;
  source: BoundSource;
  businessDb: Db;
  warnings: string[];
}

/** Same server, any key: the database joins the two tables, chunk by chunk. */
export interface JoinPlan extends PlanBase {
  kind: 'join';
  task: TaskSide;
  business: BusinessSide;
  /** How task keys compare among themselves (the task key column's collation). */
  taskSemantics: KeySemantics;
  /** Whether an index starts with the business key (else the business walk is one pass). */
  businessKeyIndexed: boolean;
}

/**
 * Same server, both keys indexed, no business `where`; text keys of one single-level collation
 * (MariaDB/MySQL) or text or integer keys compared byte-wise (PostgreSQL): the two key indexes are
 * read in weight order and merged in the client.
 */
export interface MergePlan extends PlanBase {
  kind: 'merge';
  task: TaskSide;
  business: BusinessSide;
  taskSemantics: KeySemantics;
  /** The weight of a space the collation pads with (null: NO PAD). */
  space: Buffer | null;
  /** The task side as the statement of the tasks with a NULL key reads it. */
  nullKeyTasks: NullKeyTaskSide;
}

/** The business table on another server: both sides digest their keys and the digests are bisected. */
export interface ChecksumPlan extends PlanBase {
  kind: 'checksum';
  task: CrossTaskSide;
  business: CrossBusinessSide;
  /** How keys compare across the servers (the business key column's collation). */
  keySemantics: KeySemantics;
}

/** The `mode` of a plan in the JSON of `diff`. */
export function modeOf(plan: DiffPlan): 'same-server' | 'cross-server' {
  return plan.kind === 'checksum' ? 'cross-server' : 'same-server';
}
