import type { Breach, ReportStatus } from './thresholds.js';

/**
 * When a report notifies (pure; "now" passed in). A breach that persists across runs notifies
 * once, then again only when it changes (another metric or level), clears (a recovery message),
 * or has gone on for longer than the cooldown (a reminder).
 */

/** A persisting breach is repeated once an hour by default: often enough to be seen, rarely enough to be read. */
export const DEFAULT_NOTIFY_COOLDOWN_SECONDS = 3600;

/** What was last notified to one target. */
export interface NotifiedState {
  status: ReportStatus;
  fingerprint: string;
  notifiedEpoch: number;
}

export type NotifyReason = 'new' | 'changed' | 'recovered' | 'repeat' | 'cooldown' | 'ok';

/** The breach set as a stable string: which metrics at which level (values may move without a new alert). */
export function breachFingerprint(breaches: readonly Breach[]): string {
  return breaches
    .map((b) => `${b.metric}:${b.level}`)
    .sort()
    .join(',');
}

export function decideNotify(
  previous: NotifiedState | undefined,
  status: ReportStatus,
  fingerprint: string,
  nowEpoch: number,
  cooldownSeconds: number,
): { send: boolean; reason: NotifyReason } {
  if (status === 'OK') {
    return previous && previous.status !== 'OK'
      ? { send: true, reason: 'recovered' }
      : { send: false, reason: 'ok' };
  }
  if (!previous || previous.status === 'OK') return { send: true, reason: 'new' };
  if (previous.status !== status || previous.fingerprint !== fingerprint)
    return { send: true, reason: 'changed' };
  if (nowEpoch - previous.notifiedEpoch >= cooldownSeconds) return { send: true, reason: 'repeat' };
  return { send: false, reason: 'cooldown' };
}
