import { closest } from '../../config/suggest.js';
import { statusesOfRole, type DiffRule, type TaskKey } from '../../core/diff.js';
import { BINARY_KEYS, commonKeyHash, semanticsOfCollation } from '../../core/diff-keys.js';
import type { BoundSource } from '../../db/bind-source.js';
import {
  store,
  businessRefs,
  isIntegerType,
  utf8Collation,
  type CrossBusinessSide,
  type CrossTaskSide,
  type BusinessSide,
  type TaskSide,
} from '../../db/port/index.js';
import { caseWhen, filterWhere, type Fragment, notOrNull } from '../../db/fragment.js';
import { hashesInSql } from '../../db/dialect.js';
import type { Db } from '../../db/types.js';
import { configError, TaskreconError } from '../../errors.js';
import { mergeableCollation, padsSpaces } from '../../core/diff-weights.js';
import { columnOf } from '../../db/profiles/types.js';
import { servingIndex } from '../../ops/rule-indexes.js';
import type { DiffPlan, PlanBase } from './plan.js';

/**
 * A rule checked against the live schemas of both tables, and the plan of its diff: which
 * strategy compares them (join, merge or checksum) with the SQL expressions of each side.
 * Everything that can be wrong with a rule is found here, before a chunk is read: a missing table
 * or column, a `where` that does not compile, a profile without the key field (exit 3); a biz
 * type without tasks is a warning.
 */
export interface PrepareOptions {
  sinceEpoch?: number;
  untilEpoch?: number;
  /** The DSN the task source was opened with: a business.db equal to it is the same server. */
  sourceDsn: string;
  /** How a same-server rule is walked: `auto` merges when it can (see MergePlan). */
  walk?: WalkChoice;
}

export type WalkChoice = 'auto' | 'merge' | 'join';
export const WALK_CHOICES: readonly WalkChoice[] = ['auto', 'merge', 'join'];

interface MergeFacts {
  source: BoundSource;
  rule: DiffRule;
  keyField: TaskKey;
  businessKeyIndexed: boolean;
  taskKeyIsInt: boolean;
  businessKeyIsInt: boolean;
  taskCollation: string | null;
  businessCollation: string | null;
}

/** Why a same-server rule cannot be walked by merging its key indexes, or undefined when it can. */
async function mergeBlocker(f: MergeFacts): Promise<string | undefined> {
  const mode = f.source.db.dialect.mergeKeys;
  if (!mode) return 'only MariaDB, MySQL and PostgreSQL give keys in an order the client can compare';
  if (f.rule.business.where) return 'the rule has a business where';
  if (!columnOf(f.source.profile, f.keyField)) return `the profile's ${f.keyField} is not a column`;
  if (mode === 'bytes') {
    // Byte-wise keys: both text or both integers (a text key meets an integer only as its text).
    if (f.taskKeyIsInt !== f.businessKeyIsInt) return 'one key is an integer column and the other text';
    const nondeterministic = f.taskCollation ?? f.businessCollation;
    if (nondeterministic) return `collation ${nondeterministic} calls keys equal that differ in bytes`;
  } else {
    if (f.taskKeyIsInt || f.businessKeyIsInt) return 'a key is an integer column';
    if (!f.taskCollation || f.taskCollation !== f.businessCollation) {
      return `the keys' collations differ (${f.taskCollation ?? 'none'} and ${f.businessCollation ?? 'none'})`;
    }
    if (!mergeableCollation(f.taskCollation))
      return `collation ${f.taskCollation} has more than one weight level`;
  }
  if (!f.businessKeyIndexed) return `no index on the business table starts with '${f.rule.business.key}'`;
  if (!(await taskKeyIndexed(f.source, f.keyField)))
    return 'no index on the task table starts with (biz type, key)';
  return undefined;
}

function ruleError(rule: DiffRule, message: string, hint: string): TaskreconError {
  return configError(`rule '${rule.name}': ${message}`, hint);
}

/**
 * How a task's status takes part in the rule, as SQL: the done and open (failed/pending)
 * predicates, and the role CASE built from them (1 done, 2 open, 0 other).
 */
function rolePredicates(source: BoundSource, rule: DiffRule): Pick<TaskSide, 'role' | 'done' | 'open'> {
  const done = source.sql.statusIn(statusesOfRole('done', rule.taskStatus));
  const open = source.sql.statusIn(statusesOfRole('open', rule.taskStatus));
  const role = caseWhen(
    [
      [done, 1],
      [open, 2],
    ],
    0,
  );
  return { role, done, open };
}

/** True for a status the rule does not call done: NULL and unmapped values too (role 0 or 2). */
function notDonePredicate(source: BoundSource, rule: DiffRule): Fragment {
  const done = source.sql.statusIn(statusesOfRole('done', rule.taskStatus));
  const raw = source.sql.rawStatusExpr();
  return notOrNull(done, raw);
}

/**
 * Whether the task table has an index leading with (biz type, key) columns, so the rule's tasks
 * can be read in key order; the id must be a column too (it rides along in that index).
 */
async function taskKeyIndexed(source: BoundSource, keyField: TaskKey): Promise<boolean> {
  const bizType = columnOf(source.profile, 'bizType');
  const key = columnOf(source.profile, keyField);
  if (!bizType || !key || !columnOf(source.profile, 'id')) return false;
  return Boolean(servingIndex(await source.db.indexes(source.profile.table), [bizType, key]));
}

export async function prepareRule(
  rule: DiffRule,
  source: BoundSource,
  businessDb: Db,
  options: PrepareOptions,
): Promise<DiffPlan> {
  const { sql, profile } = source;
  const warnings: string[] = [];
  const keyField: TaskKey = rule.taskKey;
  const keyExpr = sql.expr(keyField);
  if (!keyExpr) {
    throw ruleError(
      rule,
      `profile ${profile.name} has no ${keyField} to match business rows by`,
      'Set `taskKey:` in the rule to a field the profile has (bizId, eventId or id).',
    );
  }
  const bizTypeExpr = sql.expr('bizType');
  if (!bizTypeExpr) {
    throw ruleError(
      rule,
      `profile ${profile.name} has no biz type column`,
      'Map bizType to a column under `columns:` in the source.',
    );
  }
  const ref = profile.fields[keyField];
  const keyColumn =
    ref && 'column' in ref
      ? source.columns.find((c) => c.name.toLowerCase() === ref.column.toLowerCase())
      : undefined;
  const taskKeyIsInt = keyColumn ? isIntegerType(keyColumn.dataType) : false;

  const businessColumns = await businessDb.columns(rule.business.table);
  if (!businessColumns) {
    throw ruleError(
      rule,
      `business table '${rule.business.table}' does not exist in ${businessDb.display}`,
      'Fix `business.table`, or point `business.db` at the server that holds it.',
    );
  }
  const businessKey = businessColumns.find((c) => c.name.toLowerCase() === rule.business.key.toLowerCase());
  if (!businessKey) {
    const guess = closest(
      rule.business.key,
      businessColumns.map((c) => c.name),
    );
    throw ruleError(
      rule,
      `business table '${rule.business.table}' has no column '${rule.business.key}'`,
      `${guess ? `Did you mean '${guess}'? ` : ''}Columns: ${businessColumns.map((c) => c.name).join(', ')}.`,
    );
  }
  const quotedBusiness = businessRefs(businessDb.dialect, rule.business.table, businessKey.name);
  const businessTable = quotedBusiness.table;
  if (rule.business.where) {
    try {
      await store.diff.withReadOnly(businessDb, (q) =>
        store.diff.probeWhere(q, businessTable, rule.business.where as string),
      );
    } catch (error) {
      if (error instanceof TaskreconError) throw error;
      throw ruleError(
        rule,
        `business.where does not run on '${rule.business.table}': ${(error as Error).message}`,
        "Write one SQL condition on the business table's own columns.",
      );
    }
  }
  const businessKeyIsInt = isIntegerType(businessKey.dataType);
  const businessCollation = businessKeyIsInt
    ? null
    : await store.diff.columnCollation(businessDb, rule.business.table, businessKey.name);
  const taskCollation =
    keyColumn && !taskKeyIsInt
      ? await store.diff.columnCollation(source.db, profile.table, keyColumn.name)
      : null;
  const taskSemantics = taskKeyIsInt ? BINARY_KEYS : semanticsOfCollation(taskCollation);
  // Across servers the business key's collation decides; an integer business key takes the task key's.
  const crossSemantics = businessKeyIsInt ? taskSemantics : semanticsOfCollation(businessCollation);

  const sameServer = !rule.business.db || rule.business.db === options.sourceDsn;
  const indexes = await businessDb.indexes(rule.business.table);
  const businessKeyIndexed = indexes.some(
    (i) => i.columns[0]?.toLowerCase() === businessKey.name.toLowerCase(),
  );
  if (!businessKeyIndexed) {
    warnings.push(
      `business table '${rule.business.table}' has no index starting with '${businessKey.name}': every lookup scans it (see doctor)`,
    );
  }
  if (
    !(await store.diff.withReadOnly(source.db, (q) =>
      store.diff.bizTypeHasTasks(q, sql.table, bizTypeExpr, rule.bizType),
    ))
  ) {
    warnings.push(
      `rule '${rule.name}': no task of biz type '${rule.bizType}' in ${profile.table}; every business row will be an orphan`,
    );
  }
  const window = filterWhere(sql, { sinceEpoch: options.sinceEpoch, untilEpoch: options.untilEpoch });
  const task: TaskSide = {
    dialect: source.db.dialect,
    table: sql.table,
    id: sql.expr('id') as string,
    key: { sql: keyExpr, isInt: taskKeyIsInt },
    eventId: sql.expr('eventId') ?? null,
    bizType: bizTypeExpr,
    bizTypeValue: rule.bizType,
    rawStatus: sql.rawStatusExpr(),
    ...rolePredicates(source, rule),
    window,
  };
  // Both sides hash alike: CRC32 where every server hashing in SQL has it, else MD5.
  const hashesOf = (db: Db) => (hashesInSql(db.dialect) ? db.dialect.keyHashes : 'client');
  const hash = commonKeyHash(hashesOf(source.db), hashesOf(businessDb)) ?? 'md5';
  const crossTask: CrossTaskSide = {
    ...task,
    key: keyExpr,
    keyIsInt: taskKeyIsInt,
    keyIsUtf8: utf8Collation(taskCollation),
    hash,
    inWindow: caseWhen([[window, 1]], 0),
    notDone: notDonePredicate(source, rule),
  };
  const base: PlanBase = { rule, source, businessDb, warnings };
  if (!sameServer) {
    const business: CrossBusinessSide = {
      dialect: businessDb.dialect,
      table: businessTable,
      key: quotedBusiness.key,
      keyIsInt: businessKeyIsInt,
      keyIsUtf8: utf8Collation(businessCollation),
      hash,
      ...(rule.business.where ? { where: rule.business.where } : {}),
    };
    return { kind: 'checksum', ...base, task: crossTask, business, keySemantics: crossSemantics };
  }
  const business: BusinessSide = {
    table: businessTable,
    key: quotedBusiness.key,
    keyIsInt: businessKeyIsInt,
    ...(rule.business.where ? { where: rule.business.where } : {}),
  };
  const blocker = await mergeBlocker({
    source,
    rule,
    keyField,
    businessKeyIndexed,
    taskKeyIsInt,
    businessKeyIsInt,
    taskCollation,
    businessCollation,
  });
  if (options.walk === 'merge' && blocker) {
    throw ruleError(rule, `cannot merge the key indexes: ${blocker}`, 'Run it with --walk join (or auto).');
  }
  const mergeable = source.db.dialect.mergeKeys === 'bytes' || taskCollation;
  if (!blocker && options.walk !== 'join' && mergeable) {
    const space =
      taskCollation && padsSpaces(taskCollation)
        ? await store.diff.spaceWeight(businessDb, taskCollation)
        : null;
    return { kind: 'merge', ...base, task, business, taskSemantics, space, nullKeyTasks: crossTask };
  }
  return { kind: 'join', ...base, task, business, taskSemantics, businessKeyIndexed };
}
