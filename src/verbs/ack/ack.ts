import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Acknowledgement } from '../../brokers/types.js';
import { store, type AckRow, type AuditInsert } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { usageError } from '../../errors.js';
import { acknowledgementOf } from '../../ops/acks.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import { defaultOperator } from '../../ops/operator.js';
import type { AckRequest } from './request.js';

/**
 * `ack`: acknowledgements of queue findings in taskrecon_ack (created on first use, as
 * taskrecon_notify is), each added or ended in one transaction with its taskrecon_audit row.
 * Times come from the database clock, like every other cutoff.
 */

/** One acknowledgement as `ack --json` and `ack --list --json` show it. */
export interface AckEntry extends Acknowledgement {
  code: string;
  broker: string;
  /** null: the broker itself. */
  queue: string | null;
  created: string;
  /** When it was ended early (ack --remove); null otherwise. */
  ended: string | null;
  /** active, expired or ended, at the database's now. */
  state: 'active' | 'expired' | 'ended';
}

export interface AckResult {
  action: 'added' | 'removed' | 'would-add' | 'would-remove';
  dryRun: boolean;
  ack: AckEntry | null;
}

export interface AckListResult {
  now: string;
  acks: AckEntry[];
}

const iso = (epoch: number) => new Date(epoch * 1000).toISOString();

export function ackEntry(row: AckRow, nowEpoch: number): AckEntry {
  return {
    ...acknowledgementOf(row),
    code: row.code,
    broker: row.broker,
    queue: row.queue === '' ? null : row.queue,
    created: iso(row.createdEpoch),
    ended: row.endedEpoch === null ? null : iso(row.endedEpoch),
    state: row.endedEpoch !== null ? 'ended' : row.untilEpoch > nowEpoch ? 'active' : 'expired',
  };
}

function auditRow(action: string, row: AckRow, reason: string, operator: string, runId: string): AuditInsert {
  const json = JSON.stringify({
    code: row.code,
    broker: row.broker,
    queue: row.queue || null,
    until: iso(row.untilEpoch),
    ended: row.endedEpoch === null ? null : iso(row.endedEpoch),
  });
  return {
    operator,
    host: hostname(),
    action,
    source: row.broker.slice(0, 64),
    taskTable: 'taskrecon_ack',
    taskId: String(row.id),
    eventId: row.code,
    fromStatus: action === 'ack' ? null : 'active',
    toStatus: action === 'ack' ? 'active' : 'ended',
    beforeJson: action === 'ack' ? null : json,
    afterJson: json,
    reason,
    runId,
  };
}

/** Acknowledges one finding until now + untilMs; a dry run checks everything and writes nothing. */
export async function addAck(
  db: Db,
  request: AckRequest,
  options: { operator?: string; dryRun: boolean },
): Promise<AckResult> {
  await requireAuditTable(db);
  const operator = options.operator ?? defaultOperator();
  const nowEpoch = Math.floor(await db.nowEpoch());
  const row: AckRow = {
    id: 0,
    code: request.code,
    broker: request.broker,
    queue: request.queue,
    reason: request.reason,
    operator,
    createdEpoch: nowEpoch,
    untilEpoch: nowEpoch + Math.ceil(request.untilMs / 1000),
    endedEpoch: null,
    runId: randomUUID(),
  };
  if (options.dryRun) return { action: 'would-add', dryRun: true, ack: ackEntry(row, nowEpoch) };
  await store.state.ensureAckTable(db);
  row.id = await db.transaction(async (tx) => {
    const id = await store.state.insertAck(tx, db, row);
    await store.audit.insert(
      tx,
      db.dialect,
      auditRow('ack', { ...row, id }, row.reason, operator, row.runId),
    );
    return id;
  });
  return { action: 'added', dryRun: false, ack: ackEntry(row, nowEpoch) };
}

/** Every acknowledgement (`all`) or the active ones, newest first. */
export async function listAcks(db: Db, all: boolean): Promise<AckListResult> {
  const nowEpoch = Math.floor(await db.nowEpoch());
  const rows = (await store.state.ackTableExists(db)) ? await store.state.selectAcks(db, nowEpoch, all) : [];
  return { now: iso(nowEpoch), acks: rows.map((r) => ackEntry(r, nowEpoch)) };
}

/** Ends an active acknowledgement now: its finding counts again from the next run. */
export async function removeAck(
  db: Db,
  id: number,
  options: { operator?: string; reason?: string; dryRun: boolean },
): Promise<AckResult> {
  await requireAuditTable(db);
  const operator = options.operator ?? defaultOperator();
  const nowEpoch = Math.floor(await db.nowEpoch());
  const runId = randomUUID();
  const notActive = (row: AckRow | undefined) =>
    usageError(
      row
        ? `acknowledgement #${id} is not active (${ackEntry(row, nowEpoch).state})`
        : `no acknowledgement #${id}`,
      'See the active ones with taskrecon ack --list (--all for every one). Nothing was changed.',
    );
  if (!(await store.state.ackTableExists(db))) throw notActive(undefined);
  return db.transaction(async (tx) => {
    const row = await store.state.selectAck(tx, db, id);
    if (!row || row.endedEpoch !== null || row.untilEpoch <= nowEpoch) throw notActive(row);
    if (options.dryRun)
      return { action: 'would-remove' as const, dryRun: true, ack: ackEntry(row, nowEpoch) };
    if ((await store.state.endAck(tx, db, id, nowEpoch)) !== 1) throw notActive(row);
    const ended = { ...row, endedEpoch: nowEpoch };
    const reason = options.reason?.trim() || null;
    await store.audit.insert(tx, db.dialect, {
      ...auditRow('ack-remove', ended, '', operator, runId),
      reason,
    });
    return { action: 'removed' as const, dryRun: false, ack: ackEntry(ended, nowEpoch) };
  });
}
