import { store, type AuditInsert, SWEEP_ALERT_ACTION } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { maskWebhookUrl, NOTIFY_SPECS } from '../../notify/registry.js';
import { sendWebhook } from '../../notify/send.js';
import type { Alert, AlertFailing, NotifyTarget } from '../../notify/types.js';
import type { PlannedRow } from '../../ops/sweep/plan.js';
import type { SweepResult } from './types.js';

/**
 * Second failures go to a person once per job: the rows not alerted before (no `sweep-alert` audit
 * row for their identity) are claimed in taskrecon_alert_claim (a unique key per job identity and
 * task table) before anything is sent, so of two sweeps that find the same second failure at the
 * same moment only the one holding the claim alerts it. The claimed jobs are sent in one message
 * per target, with biz context (job class, row id, job identity, the error); when at least one
 * target took the message, the claims are marked sent and each alerted job gets its `sweep-alert`
 * audit row. A message no target took releases its claims and is tried again by the next sweep; a
 * claim left unsent by a killed sweep is taken over after ALERT_CLAIM_STALE_SECONDS.
 */
export interface SecondFailure {
  planned: PlannedRow;
  sourceName: string;
  table: string;
  db: Db;
}

export interface AlertContext {
  targets: NotifyTarget[];
  nowIso: string;
  sinceSeconds: number;
  runId: string;
  operator: string;
  host: string;
  /** Completes the commands the alert tells a person to run with the connection of this run. */
  paste?: (text: string) => string;
}

/** How long an unsent claim holds (a sweep killed between claim and send): far above a send's timeout. */
export const ALERT_CLAIM_STALE_SECONDS = 600;

/** How many jobs one message names per job class. */
const SAMPLES = 5;

/** The jobs among `failures` not alerted before, per their table. */
export async function notYetAlerted(failures: SecondFailure[]): Promise<SecondFailure[]> {
  const out: SecondFailure[] = [];
  // Per database and table: shards of one source may have tables of one name in several databases.
  for (const group of byTable(failures)) {
    const first = group[0] as SecondFailure;
    const alerted = await store.audit.countByIdentity(
      first.db,
      first.db.dialect,
      first.table,
      group.map((f) => f.planned.identity),
      SWEEP_ALERT_ACTION,
    );
    const seen = new Set<string>();
    for (const f of group) {
      if (alerted.has(f.planned.identity) || seen.has(f.planned.identity)) continue;
      seen.add(f.planned.identity);
      out.push(f);
    }
  }
  return out;
}

export function buildSecondFailureAlert(failures: SecondFailure[], ctx: AlertContext): Alert {
  const byBizType = new Map<string | null, SecondFailure[]>();
  for (const f of failures)
    byBizType.set(f.planned.bizType, [...(byBizType.get(f.planned.bizType) ?? []), f]);
  const failing: AlertFailing[] = [...byBizType.entries()].map(([bizType, group]) => {
    const sample = group[0] as SecondFailure;
    return {
      bizType,
      failed: group.length,
      failedOpen: group.length,
      sample: {
        id: String(sample.planned.id),
        bizId: null,
        eventId: sample.planned.identity,
        error: sample.planned.lastError,
      },
    };
  });
  const sources = [...new Set(failures.map((f) => f.sourceName))];
  return {
    status: 'WARNING',
    recovered: false,
    source: sources.join(', '),
    now: ctx.nowIso,
    windowSeconds: ctx.sinceSeconds,
    title: `[taskrecon] ${failures.length} second failure${failures.length === 1 ? '' : 's'}: jobs that failed again after their sweep retry`,
    breaches: [],
    summary: failures
      .slice(0, SAMPLES * failing.length)
      .map(
        (f) =>
          `${f.planned.bizType ?? '(no class)'} #${f.planned.id} (rule ${f.planned.rule.name}, swept ${f.planned.sweepsBefore}x)`,
      )
      .join(' · '),
    failing,
    notes: [
      (ctx.paste ?? String)(
        `run ${ctx.runId}: retry by hand with \`taskrecon compensate --action retry\`, or fix and \`--action forget\``,
      ),
    ],
  };
}

/** Per database and task table, the failures of one group (claims are kept beside the audit log). */
function byTable(failures: SecondFailure[]): SecondFailure[][] {
  const groups = new Map<Db, Map<string, SecondFailure[]>>();
  for (const f of failures) {
    const tables = groups.get(f.db) ?? new Map<string, SecondFailure[]>();
    tables.set(f.table, [...(tables.get(f.table) ?? []), f]);
    groups.set(f.db, tables);
  }
  return [...groups.values()].flatMap((tables) => [...tables.values()]);
}

/** The failures whose alert this run claimed (the others belong to a sweep running beside it). */
async function claim(failures: SecondFailure[], runId: string): Promise<SecondFailure[]> {
  const out: SecondFailure[] = [];
  for (const group of byTable(failures)) {
    const { db, table } = group[0] as SecondFailure;
    await store.state.ensureAlertClaimTable(db);
    const now = await db.nowEpoch();
    const claimed = await store.state.claimAlerts(
      db,
      table,
      group.map((f) => f.planned.identity),
      runId,
      now,
      now - ALERT_CLAIM_STALE_SECONDS,
    );
    out.push(...group.filter((f) => claimed.has(f.planned.identity)));
  }
  return out;
}

/**
 * Claims, sends and records the alert; returns the jobs alerted by this run, the notification
 * outcomes and whether the message was delivered anywhere.
 */
export async function alertSecondFailures(
  candidates: SecondFailure[],
  ctx: AlertContext,
): Promise<{ delivered: boolean; alerted: SecondFailure[]; notifications: SweepResult['notifications'] }> {
  if (candidates.length === 0 || ctx.targets.length === 0)
    return { delivered: false, alerted: [], notifications: [] };
  const failures = await claim(candidates, ctx.runId);
  if (failures.length === 0) return { delivered: false, alerted: [], notifications: [] };
  const alert = buildSecondFailureAlert(failures, ctx);
  const notifications = await Promise.all(
    ctx.targets.map(async (target) => {
      const spec = NOTIFY_SPECS[target.kind];
      const sent = await sendWebhook(spec, spec.build(alert, target, Date.now()), target.timeoutMs);
      const shown = maskWebhookUrl(target.url);
      return {
        kind: target.kind,
        target: shown,
        outcome: sent.ok ? ('sent' as const) : ('failed' as const),
        error: sent.error && sent.error.split(target.url).join(shown),
      };
    }),
  );
  const delivered = notifications.some((n) => n.outcome === 'sent');
  for (const group of byTable(failures)) {
    const { db, table } = group[0] as SecondFailure;
    const identities = group.map((f) => f.planned.identity);
    await store.state.settleAlertClaims(db, table, identities, ctx.runId, delivered);
  }
  if (delivered) {
    const byDb = new Map<Db, AuditInsert[]>();
    for (const f of failures) {
      const rows = byDb.get(f.db) ?? [];
      rows.push({
        operator: ctx.operator,
        host: ctx.host,
        action: SWEEP_ALERT_ACTION,
        source: f.sourceName,
        taskTable: f.table,
        taskId: String(f.planned.id),
        eventId: f.planned.identity,
        fromStatus: 'failed',
        toStatus: 'failed',
        beforeJson: null,
        afterJson: JSON.stringify({
          rule: f.planned.rule.name,
          sweeps: f.planned.sweepsBefore,
          sent: notifications,
        }),
        reason: `second failure after ${f.planned.sweepsBefore} sweep retr${f.planned.sweepsBefore === 1 ? 'y' : 'ies'} (rule ${f.planned.rule.name})`,
        runId: ctx.runId,
      });
      byDb.set(f.db, rows);
    }
    for (const [db, rows] of byDb) await store.audit.insertBatch(db, db.dialect, rows);
  }
  return { delivered, alerted: delivered ? failures : [], notifications };
}
