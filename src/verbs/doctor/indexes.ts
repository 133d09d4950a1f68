import type { BoundSource } from '../../db/bind-source.js';
import { store } from '../../db/port/index.js';
import { summaryIndexCheck } from './summary-indexes.js';
import type { Db, ExecResult, IndexInfo, Row } from '../../db/types.js';
import { ALL_LISTS, capabilityNotes, streamList, type ScanOptions } from '../../ops/task-lists.js';
import { check, type DoctorCheck, type ExplainedQuery } from './check.js';

interface Statement {
  name: string;
  sql: string;
  params: unknown[];
}

/**
 * A Db that records the statements it is given instead of running them (reads return no rows).
 * Doctor runs scan's own functions on it, so the plans it shows are those of the real queries.
 */
class RecordingDb implements Db {
  readonly statements: Statement[] = [];
  label = '';

  constructor(private readonly real: Db) {}

  get engine() {
    return this.real.engine;
  }
  get dialect() {
    return this.real.dialect;
  }
  get display() {
    return this.real.display;
  }
  get sessionTimeZone() {
    return this.real.sessionTimeZone;
  }
  get warnings() {
    return this.real.warnings;
  }

  async query<T = Row>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    this.statements.push({ name: this.label, sql, params: [...params] });
    return [];
  }

  async execute(): Promise<ExecResult> {
    throw new Error('doctor records reads only');
  }

  stream(sql: string, params: readonly unknown[] = []): AsyncIterable<unknown> {
    this.statements.push({ name: this.label, sql, params: [...params] });
    return {
      [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true as const, value: undefined }) }),
    };
  }

  transaction<T>(): Promise<T> {
    throw new Error('doctor records reads only');
  }

  columns(table: string) {
    return this.real.columns(table);
  }
  indexes(table: string) {
    return this.real.indexes(table);
  }
  nowEpoch() {
    return this.real.nowEpoch();
  }
  async close(): Promise<void> {}
}

/** The statements `scan` runs with these options, each named by what it is for. */
export async function scanStatements(source: BoundSource, options: ScanOptions): Promise<Statement[]> {
  const recorder = new RecordingDb(source.db);
  const recorded: BoundSource = { ...source, db: recorder };
  const capability = capabilityNotes(source);
  const stuckCutoff = options.nowEpoch - Math.floor(options.stuckAfterMs / 1000);
  recorder.label = 'summary by status';
  await store.tasks.countByStatusAndBizType(recorded, options);
  if (!capability.due) {
    recorder.label = 'due count';
    await store.tasks.countDue(recorded, options, options.nowEpoch);
  }
  if (!capability.stuck) {
    recorder.label = 'stuck count';
    await store.tasks.countStuck(recorded, options, stuckCutoff);
  }
  for (const kind of ALL_LISTS) {
    recorder.label = `${kind} list`;
    const rows = streamList(recorded, kind, options);
    if (rows) for await (const _row of rows) void _row;
  }
  // The stuck list reads rows without a next-retry time first, then the rest: name them apart.
  const seen = new Map<string, number>();
  return recorder.statements.map((s) => {
    const n = (seen.get(s.name) ?? 0) + 1;
    seen.set(s.name, n);
    return n === 1 ? s : { ...s, name: `${s.name} (part ${n})` };
  });
}

export async function explainStatements(db: Db, statements: Statement[]): Promise<ExplainedQuery[]> {
  const out: ExplainedQuery[] = [];
  for (const s of statements) {
    const plan = await store.doctor.explain(db, s.sql, s.params);
    const summary = store.doctor.planLines(db, plan);
    out.push({ ...s, plan, ...store.doctor.readPlan(db, plan), ...(summary ? { summary } : {}) });
  }
  return out;
}

const leads = (index: IndexInfo, columns: string[]): boolean =>
  columns.every((c, i) => index.columns[i]?.toLowerCase() === c.toLowerCase());

/**
 * The index scan pages through: (status, next_retry_time) for a status column, the reservation
 * column for Laravel's jobs, the primary key for failed-job tables. The verdict rests on the
 * indexes that exist; the plans of the real scan queries are attached so the operator sees what
 * the engine does with them (a tiny table may be scanned whole whatever its indexes).
 */
export function scanIndexCheck(
  source: BoundSource,
  indexes: IndexInfo[],
  plans: ExplainedQuery[],
): DoctorCheck {
  const { profile, db } = source;
  const model = profile.status;
  const nrtRef = profile.fields.nextRetryAt;
  const nrt = nrtRef && 'column' in nrtRef ? nrtRef.column : undefined;
  const dueQuery = plans.find((p) => p.name === 'due count');
  const planNote = (p: ExplainedQuery | undefined) =>
    p
      ? ` EXPLAIN of the due count: ${p.fullScan ? 'reads the whole table' : `reads through ${p.indexes.join(', ') || 'no index'}`}.`
      : '';
  const withPlans = (c: DoctorCheck): DoctorCheck => ({ ...c, explain: plans });
  const name = 'scan index';
  if (model.kind === 'constant') {
    return withPlans(
      check(name, 'ok', `every ${profile.table} row is ${model.status}: the lists page by primary key`),
    );
  }
  if (model.kind === 'executions') {
    return withPlans(
      check(
        name,
        'ok',
        `${profile.table}'s state is the execution table holding each job: its own indexes (job_id) serve the lookups${planNote(dueQuery)}`,
      ),
    );
  }
  if (model.kind === 'reservation') {
    const good = indexes.find((i) => leads(i, [model.column]));
    if (good)
      return withPlans(
        check(
          name,
          'ok',
          `${good.name} (${good.columns.join(', ')}) serves due and stuck.${planNote(dueQuery)}`,
        ),
      );
    return withPlans(
      check(
        name,
        'warn',
        `no index leads with ${model.column}: due and stuck read the whole ${profile.table} table (fine for a short queue, slow for millions of rows).${planNote(dueQuery)}`,
        store.doctor.createIndexStatement(
          db.dialect,
          `${profile.table}_reserved_available_index`,
          profile.table,
          nrt ? [model.column, nrt] : [model.column],
          true,
        ),
      ),
    );
  }
  const wanted = nrt ? [model.column, nrt] : [model.column];
  const described = `(${wanted.join(', ')})`;
  // Lists and claims read ORDER BY next_retry_time, id: where an index does not end with the
  // primary key by itself, the recommended one names it (a (status, next_retry_time) index still serves).
  const idRef = profile.fields.id;
  const idColumn = idRef && 'column' in idRef ? idRef.column : undefined;
  const create = store.doctor.createIndexStatement(
    db.dialect,
    `idx_${nrt ? 'status_next_retry' : 'status'}`,
    profile.table,
    nrt && idColumn && !db.dialect.indexesEndWithPrimaryKey ? [...wanted, idColumn] : wanted,
    true,
  );
  const exact = indexes.find((i) => leads(i, wanted));
  if (exact)
    return withPlans(
      check(
        name,
        'ok',
        `${exact.name} (${exact.columns.join(', ')}) serves the scan's ${described} reads.${planNote(dueQuery)}`,
      ),
    );
  const partial = indexes.find((i) => leads(i, [model.column]) || (nrt !== undefined && leads(i, [nrt])));
  if (partial) {
    return withPlans(
      check(
        name,
        'warn',
        `no ${described} index; ${partial.name} (${partial.columns.join(', ')}) serves part of the scan's reads.${planNote(dueQuery)}`,
        create,
      ),
    );
  }
  return withPlans(
    check(
      name,
      'fail',
      `the ${described} index is missing: scan and redrive read the whole ${profile.table} table for every page.${planNote(dueQuery)}`,
      create,
    ),
  );
}

export async function indexChecks(source: BoundSource, options: ScanOptions): Promise<DoctorCheck[]> {
  const indexes = await source.db.indexes(source.profile.table);
  const plans = await explainStatements(
    source.db,
    await scanStatements(source, { ...options, lists: ALL_LISTS }),
  );
  if (source.profile.kind === 'job-system') {
    // The job system's migrations own its table and indexes: taskrecon shows the plans, adds none.
    const owner = source.profile.system ?? source.profile.name;
    const note = `${owner} owns ${source.profile.table} and its indexes (${indexes.map((i) => i.name).join(', ') || 'none'}); taskrecon adds none to it. The plans of the scan statements are below`;
    return [
      { ...check('scan index', 'ok', note), explain: plans },
      check('summary indexes', 'ok', `${owner}'s own indexes serve its table; taskrecon recommends none`),
    ];
  }
  return [
    scanIndexCheck(source, indexes, plans),
    summaryIndexCheck(source, indexes, await store.tasks.estimatedRows(source)),
  ];
}
