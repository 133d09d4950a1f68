import { INTENT_TABLE, intentDdl } from '../ddl.js';
import type { Dialect } from '../dialect.js';
import { placeholders } from '../task-sql.js';
import type { Db, Queryable, Row } from '../types.js';

/**
 * Statements on `taskrecon_intent`, the write-ahead intents of writes that span the database and a
 * broker. An intent is inserted (and committed) before its batch touches the broker and updated
 * once, from `open` to how it ended, by the guarded UPDATE of `settleIntent`. Times are epoch
 * seconds from the database clock.
 */

/** How an intent ended: its batch landed (and was audited), never landed, or landed in part. */
export type IntentState = 'open' | 'landed' | 'not-landed' | 'partial';

/** One intent as written. `jobs` and `detail` are stored as JSON text. */
export interface IntentInsert {
  runId: string;
  kind: string;
  source: string;
  from: string;
  to: string;
  operator: string;
  host: string;
  action: string;
  reason: string | null;
  jobs: readonly string[];
  detail: unknown;
}

/** One intent as read back. */
export interface IntentRecord extends IntentInsert {
  id: number;
  state: IntentState;
  openedEpoch: number;
  settledEpoch: number | null;
  settledRun: string | null;
}

export interface IntentFilter {
  kinds?: readonly string[];
  source?: string;
  runId?: string;
  /** Only intents after this id (a keyset page). */
  afterId?: number;
}

const WRITE_COLUMNS = [
  'run_id',
  'kind',
  'source',
  'from_ref',
  'to_ref',
  'operator',
  'host',
  'action',
  'reason',
  'jobs',
  'detail',
] as const;

/**
 * Whether the intent table exists.
 * In: the connection. Out: true/false. Reads the catalogue only.
 */
export async function intentTableExists(db: Db): Promise<boolean> {
  return (await db.columns(INTENT_TABLE)) !== undefined;
}

/**
 * Creates taskrecon_intent when it is missing (a database set up before it existed).
 * In: the connection. Side effect: CREATE TABLE / INDEX IF NOT EXISTS.
 */
export async function ensureIntentTable(db: Db): Promise<void> {
  if (await intentTableExists(db)) return;
  for (const statement of intentDdl(db.dialect)) await db.execute(statement);
}

/**
 * Writes one open intent. The caller commits it before the broker is touched.
 * In: the intent. Out: its id. Side effect: one INSERT; opened_epoch from the database clock.
 */
export async function insertIntent(tx: Queryable, dialect: Dialect, intent: IntentInsert): Promise<number> {
  const q = (c: string) => dialect.quoteId(c);
  const result = await tx.execute(
    `INSERT INTO ${q(INTENT_TABLE)} (${WRITE_COLUMNS.map(q).join(', ')}, ${q('state')}, ${q('opened_epoch')})
     VALUES (${placeholders(WRITE_COLUMNS)}, 'open', ${dialect.nowEpoch})`,
    [
      intent.runId,
      intent.kind,
      intent.source,
      intent.from,
      intent.to,
      intent.operator,
      intent.host,
      intent.action,
      intent.reason,
      JSON.stringify(intent.jobs),
      intent.detail === undefined ? null : JSON.stringify(intent.detail),
    ],
  );
  return Number(result.insertId);
}

/**
 * Closes an open intent, guarded on its being open: run it on the transaction of the audit rows it
 * settles with, so both commit or neither, and a second settler changes nothing.
 * In: id, the state it ended in, the settling run. Out: true when this call closed it.
 * Side effect: one UPDATE of at most one row.
 */
export async function settleIntent(
  tx: Queryable,
  dialect: Dialect,
  id: number,
  state: Exclude<IntentState, 'open'>,
  settledRun: string,
): Promise<boolean> {
  const q = (c: string) => dialect.quoteId(c);
  const result = await tx.execute(
    `UPDATE ${q(INTENT_TABLE)} SET ${q('state')} = ?, ${q('settled_epoch')} = ${dialect.nowEpoch}, ${q('settled_run')} = ?
      WHERE ${q('id')} = ? AND ${q('state')} = 'open'`,
    [state, settledRun, id],
  );
  return result.affectedRows === 1;
}

function toRecord(row: Row): IntentRecord {
  const text = (v: unknown): string | null =>
    v === null || v === undefined ? null : Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  const json = (v: unknown): unknown => {
    const t = text(v);
    return t === null ? undefined : (JSON.parse(t) as unknown);
  };
  const jobs = json(row.jobs);
  return {
    id: Number(row.id),
    runId: String(text(row.run_id)),
    kind: String(text(row.kind)),
    source: String(text(row.source)),
    from: String(text(row.from_ref)),
    to: String(text(row.to_ref)),
    operator: String(text(row.operator)),
    host: String(text(row.host)),
    action: String(text(row.action)),
    reason: text(row.reason),
    jobs: Array.isArray(jobs) ? jobs.map(String) : [],
    detail: json(row.detail),
    state: String(text(row.state)) as IntentState,
    openedEpoch: Number(row.opened_epoch),
    settledEpoch:
      row.settled_epoch === null || row.settled_epoch === undefined ? null : Number(row.settled_epoch),
    settledRun: text(row.settled_run),
  };
}

/**
 * Intents in one state (oldest first), optionally of some kinds, one source, one run.
 * In: state, filter, limit. Out: up to `limit` intents. Reads only (state index).
 */
export async function selectIntents(
  db: Queryable,
  dialect: Dialect,
  state: IntentState,
  filter: IntentFilter,
  limit: number,
): Promise<IntentRecord[]> {
  const q = (c: string) => dialect.quoteId(c);
  const where = [`${q('state')} = ?`];
  const params: unknown[] = [state];
  if (filter.kinds?.length) {
    where.push(`${q('kind')} IN (${placeholders(filter.kinds)})`);
    params.push(...filter.kinds);
  }
  if (filter.source !== undefined) {
    where.push(`${q('source')} = ?`);
    params.push(filter.source);
  }
  if (filter.runId !== undefined) {
    where.push(`${q('run_id')} = ?`);
    params.push(filter.runId);
  }
  if (filter.afterId !== undefined) {
    where.push(`${q('id')} > ?`);
    params.push(filter.afterId);
  }
  const rows = await db.query<Row>(
    `SELECT * FROM ${q(INTENT_TABLE)} WHERE ${where.join(' AND ')} ORDER BY ${q('id')} LIMIT ${Math.trunc(limit)}`,
    params,
  );
  return rows.map(toRecord);
}
