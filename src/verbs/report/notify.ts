import { breachFingerprint, decideNotify } from '../../core/report-cooldown.js';
import type { NotificationOutcome, ReportResult } from '../../core/report.js';
import { store } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { buildAlert } from '../../notify/alert.js';
import { maskWebhookUrl, NOTIFY_SPECS, targetKey } from '../../notify/registry.js';
import { sendWebhook } from '../../notify/send.js';
import type { NotifyTarget } from '../../notify/types.js';

export interface NotifyOptions {
  targets: NotifyTarget[];
  cooldownSeconds: number;
  /** The database's now (the cooldown clock). */
  nowEpoch: number;
  /** The signing time for DingTalk/Feishu (they check it against real time). */
  nowMs?: number;
}

/**
 * Sends the report to every target that the cooldown lets through, all at once, each with its own
 * timeout; records each delivered message so the next run can tell a persisting breach from a new
 * one. A failed webhook is reported and retried on the next run (its state is not recorded).
 */
export async function notifyReport(
  db: Db,
  report: Omit<ReportResult, 'notifications'>,
  options: NotifyOptions,
): Promise<NotificationOutcome[]> {
  if (options.targets.length === 0) return [];
  await store.state.ensureNotifyTable(db);
  const fingerprint = breachFingerprint(report.breaches);
  const source = report.source.name;
  return Promise.all(
    options.targets.map(async (target): Promise<NotificationOutcome> => {
      const key = targetKey(target.kind, target.url);
      const shown = maskWebhookUrl(target.url);
      const previous = await store.state.readNotified(db, source, key);
      const decision = decideNotify(
        previous,
        report.status,
        fingerprint,
        options.nowEpoch,
        options.cooldownSeconds,
      );
      const base = { kind: target.kind, target: shown, reason: decision.reason };
      if (!decision.send)
        return { ...base, outcome: 'suppressed', httpStatus: null, error: null, bytes: null };
      const spec = NOTIFY_SPECS[target.kind];
      const request = spec.build(
        buildAlert(report, decision.reason === 'recovered'),
        target,
        options.nowMs ?? Date.now(),
      );
      const sent = await sendWebhook(spec, request, target.timeoutMs);
      if (sent.ok)
        await store.state.writeNotified(db, source, key, {
          status: report.status,
          fingerprint,
          notifiedEpoch: options.nowEpoch,
        });
      const error = sent.error && sent.error.split(target.url).join(shown);
      return {
        ...base,
        outcome: sent.ok ? 'sent' : 'failed',
        httpStatus: sent.httpStatus,
        error,
        bytes: sent.bytes,
      };
    }),
  );
}
