import type { RuleConfig } from '../../config/schema.js';
import type { Finding } from '../../core/diff.js';
import { store, CREATE_FIELDS } from '../../db/port/index.js';
import { columnOf } from '../../db/profiles/types.js';
import { usageError } from '../../errors.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import type { RuleTarget } from './diff.js';

/**
 * `diff --create-missing`: the dispatch that never happened (the payment callback's push threw, the
 * order is paid, no task exists). For each orphan business row of a rule with `create:`, the task
 * it should have had: biz type of the rule, biz id = the business key, event id `<rule>:<key>`,
 * a JSON payload of the named business columns, pending, due now. The event id is UNIQUE in the
 * task table, so a rerun — or two runs at once — creates each task once; each creation writes its
 * `create-missing` audit row in the same transaction. Then `redrive` runs them like any task.
 */
export interface CreateMissingItem {
  rule: string;
  key: string;
  eventId: string;
  outcome: 'created' | 'would-create' | 'exists' | 'refused';
  taskId: number | string | null;
  reason?: string;
}

export interface CreateMissingResult {
  dryRun: boolean;
  created: number;
  existing: number;
  refused: number;
  results: CreateMissingItem[];
}

export interface CreateMissingRequest {
  dryRun: boolean;
  operator: string;
  host: string;
  reason: string | null;
  runId: string;
}

/** The longest event id the reference table holds (event_id varchar(64)). */
const EVENT_ID_MAX = 64;

/** The rules that can create their missing tasks; exit 3 before anything is read when one cannot. */
export async function checkCreatable(
  targets: RuleTarget[],
  configured: readonly RuleConfig[],
): Promise<RuleTarget[]> {
  const creatable = targets.filter((t) => configured.find((r) => r.name === t.rule.name)?.create);
  if (creatable.length === 0) {
    throw usageError(
      '--create-missing: none of the rules says how to build a missing task',
      'Add `create: { payload: [order_id, user_id] }` to a rule: the business columns its task payload is built from.',
    );
  }
  for (const target of creatable) {
    const { rule, source } = target;
    const create = configured.find((r) => r.name === rule.name)?.create as NonNullable<RuleConfig['create']>;
    const at = `rules.${rule.name}.create`;
    if (rule.taskKey !== 'bizId')
      throw usageError(
        `${at}: the rule matches tasks by ${rule.taskKey}; created tasks carry the business key as biz id, so the rule must use taskKey: bizId`,
      );
    const lacking = CREATE_FIELDS.filter((f) => !columnOf(source.profile, f));
    if (source.profile.kind !== 'task' || source.profile.status.kind !== 'column' || lacking.length)
      throw usageError(
        `${at}: source ${source.name} (${source.profile.name}) cannot hold created tasks${lacking.length ? `: it has no ${lacking.join(', ')} column` : ''}`,
        'Create missing tasks in an async-task-shaped table (biz type, biz id, unique event id, payload, status).',
      );
    const live = new Set(
      (await target.businessDb.columns(rule.business.table))?.map((c) => c.name.toLowerCase()) ?? [],
    );
    const unknown = create.payload.filter((c) => !live.has(c.toLowerCase()));
    if (unknown.length)
      throw usageError(
        `${at}.payload: ${rule.business.table} has no column ${unknown.join(', ')}`,
        `Its columns: ${[...live].join(', ')}.`,
      );
  }
  return creatable;
}

export async function createMissing(
  targets: RuleTarget[],
  configured: readonly RuleConfig[],
  orphans: readonly Finding[],
  request: CreateMissingRequest,
): Promise<CreateMissingResult> {
  const result: CreateMissingResult = {
    dryRun: request.dryRun,
    created: 0,
    existing: 0,
    refused: 0,
    results: [],
  };
  for (const target of targets) {
    const { rule, source } = target;
    const create = configured.find((r) => r.name === rule.name)?.create;
    if (!create) continue;
    const keys = [
      ...new Set(
        orphans
          .filter((f) => f.rule === rule.name && f.kind === 'orphan' && f.key !== null)
          .map((f) => f.key as string),
      ),
    ];
    if (keys.length === 0) continue;
    if (!request.dryRun) await requireAuditTable(source.db);
    const business = await store.tasks.selectBusinessColumns(
      target.businessDb,
      rule.business.table,
      rule.business.key,
      create.payload,
      keys,
    );
    for (const key of keys) {
      const eventId = `${rule.name}:${key}`;
      const row = business.get(key);
      const base = { rule: rule.name, key, eventId, taskId: null };
      if (eventId.length > EVENT_ID_MAX || !row) {
        result.refused++;
        result.results.push({
          ...base,
          outcome: 'refused',
          reason: row ? `the event id is longer than ${EVENT_ID_MAX} characters` : 'the business row is gone',
        });
        continue;
      }
      const payload = JSON.stringify(Object.fromEntries(create.payload.map((c) => [c, jsonValue(row[c])])));
      if (request.dryRun) {
        result.results.push({ ...base, outcome: 'would-create' });
        continue;
      }
      const task = { bizType: rule.bizType, bizId: key, eventId, payload };
      const id = await source.db.transaction(async (tx) => {
        const inserted = await store.tasks.insertTaskIfAbsent(tx, source, task);
        if (inserted === null) return null;
        await store.audit.insert(tx, source.db.dialect, {
          operator: request.operator,
          host: request.host,
          action: 'create-missing',
          source: source.name,
          taskTable: source.profile.table,
          taskId: String(inserted),
          eventId,
          fromStatus: null,
          toStatus: 'pending',
          beforeJson: null,
          afterJson: JSON.stringify({ ...task, payload: JSON.parse(payload) as unknown, status: 'pending' }),
          reason: request.reason ?? `diff rule ${rule.name}: business row ${key} has no task`,
          runId: request.runId,
        });
        return inserted;
      });
      if (id === null) {
        result.existing++;
        result.results.push({ ...base, outcome: 'exists', reason: `a task with event id ${eventId} exists` });
      } else {
        result.created++;
        result.results.push({ ...base, outcome: 'created', taskId: id });
      }
    }
  }
  return result;
}

function jsonValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value.toString();
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  if (value instanceof Date) return value.toISOString();
  return value;
}

/**
 * What the diff command holds while it runs with --create-missing: the creatable rules (checked
 * before the diff reads anything), the orphans collected from the diff's findings, and the
 * creation at the end. `confirm` asks a person (terminal without --yes); refusing writes nothing.
 */
export class CreateMissingSession {
  private readonly orphans: Finding[] = [];
  private constructor(
    private readonly targets: RuleTarget[],
    private readonly configured: readonly RuleConfig[],
  ) {}

  static async open(
    targets: RuleTarget[],
    configured: readonly RuleConfig[],
    consent: { dryRun: boolean; yes: boolean; interactive: boolean },
  ): Promise<CreateMissingSession> {
    requireCreateConsent(consent);
    return new CreateMissingSession(await checkCreatable(targets, configured), configured);
  }

  /** Keeps the orphans of creatable rules (pass to runDiff's onFinding). */
  readonly collect = (finding: Finding): void => {
    if (finding.kind === 'orphan' && this.targets.some((t) => t.rule.name === finding.rule))
      this.orphans.push(finding);
  };

  get pending(): number {
    return new Set(this.orphans.map((f) => `${f.rule}\n${f.key}`)).size;
  }

  async run(
    request: CreateMissingRequest,
    confirm?: (count: number) => Promise<boolean>,
  ): Promise<CreateMissingResult> {
    if (!request.dryRun && this.pending > 0 && confirm && !(await confirm(this.pending)))
      return { dryRun: true, created: 0, existing: 0, refused: 0, results: [] };
    return createMissing(this.targets, this.configured, this.orphans, request);
  }
}

/** Creating needs a person's yes (a terminal), --yes, or --dry-run; exit 3 before anything is read. */
export function requireCreateConsent(consent: { dryRun: boolean; yes: boolean; interactive: boolean }): void {
  if (!consent.dryRun && !consent.yes && !consent.interactive)
    throw usageError(
      '--create-missing refuses to create tasks without a confirmation: this is not a terminal',
      'Pass --yes to create every missing task, or --dry-run to see what would be created.',
    );
}

/** One onFinding that feeds both the collector and the command's own handler (either may be absent). */
export function withCollector(
  collect: ((finding: Finding) => void) | undefined,
  handler: ((finding: Finding) => void | Promise<void>) | undefined,
): ((finding: Finding) => void | Promise<void>) | undefined {
  if (!collect) return handler;
  if (!handler) return collect;
  return (finding) => {
    collect(finding);
    return handler(finding);
  };
}
