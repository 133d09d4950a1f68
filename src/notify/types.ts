import type { ReportStatus } from '../core/thresholds.js';

export const NOTIFY_KINDS = ['wecom', 'dingtalk', 'feishu', 'slack', 'generic'] as const;
export type NotifyKind = (typeof NOTIFY_KINDS)[number];

/** Where to send: a kind, its URL, and the signing secret where the kind has one (DingTalk, Feishu). */
export interface NotifyTarget {
  kind: NotifyKind;
  url: string;
  secret?: string;
  timeoutMs: number;
}

/** A failing biz type as an alert names it, with one task to look at (the classic task-table design). */
export interface AlertFailing {
  bizType: string | null;
  failed: number | null;
  failedOpen: number | null;
  sample: { id: number | string; bizId: string | null; eventId: string | null; error: string | null } | null;
}

/** What every message says, whatever its kind. */
export interface Alert {
  status: ReportStatus;
  /** True when this message announces that an earlier breach cleared. */
  recovered: boolean;
  source: string;
  now: string;
  windowSeconds: number;
  /** One line: tool, status, source and the breaches. */
  title: string;
  breaches: string[];
  /** The headline numbers, one line. */
  summary: string;
  failing: AlertFailing[];
  notes: string[];
}

/** One HTTP request, ready to send. */
export interface OutboundRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** A payload builder for one kind. `nowMs` is the signing time (DingTalk and Feishu check it against theirs). */
export interface NotifyKindSpec {
  kind: NotifyKind;
  /** The size limit the kind enforces, as the builder measures it (see each file). */
  limit: { bytes?: number; chars?: number; of: 'content' | 'body' | 'text' };
  build(alert: Alert, target: NotifyTarget, nowMs: number): OutboundRequest;
  /** Did the endpoint accept the message? (WeCom/DingTalk/Feishu answer HTTP 200 with an error code.) */
  accepted(httpStatus: number, body: string): { ok: boolean; error?: string };
}
