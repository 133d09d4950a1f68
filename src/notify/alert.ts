import { formatSeconds } from '../core/duration.js';
import { failingBizTypes, type ReportResult } from '../core/report.js';
import { describeBreach, firstLine, formatMetric } from '../core/report-text.js';
import type { Alert } from './types.js';

/** How many failing biz types a message names. */
export const ALERT_FAILING_LIMIT = 5;
/** How much of a sample's last_error a message quotes. */
export const ALERT_ERROR_CHARS = 160;

/** The content every kind formats: status, breaches, headline numbers, the worst biz types with a sample. */
export function buildAlert(report: Omit<ReportResult, 'notifications'>, recovered: boolean): Alert {
  const m = report.metrics;
  const breaches = report.breaches.map(describeBreach);
  const parts: string[] = [];
  if (m.created !== null) parts.push(`created ${m.created}`);
  if (m.failed !== null) parts.push(`failed ${m.failed}`);
  if (m.failureRate !== null) parts.push(`failure rate ${formatMetric('failureRate', m.failureRate)}`);
  if (m.latencyP95Seconds !== null) parts.push(`p95 ${formatSeconds(m.latencyP95Seconds)}`);
  if (m.stuck !== null) parts.push(`stuck ${m.stuck}`);
  if (m.due !== null) parts.push(`due ${m.due}`);
  if (m.oldestDueSeconds !== null) parts.push(`oldest due ${formatSeconds(m.oldestDueSeconds)}`);
  if (m.failedOpen !== null) parts.push(`failed open ${m.failedOpen}`);
  const headline = recovered ? 'RECOVERED' : report.status;
  return {
    status: report.status,
    recovered,
    source: report.source.name,
    now: report.now,
    windowSeconds: report.window.seconds,
    title: `[taskrecon] ${headline} ${report.source.name}${breaches.length ? `: ${breaches.join(', ')}` : ''}`,
    breaches,
    summary: `${parts.join(' · ')} (window ${formatSeconds(report.window.seconds)})`,
    failing: failingBizTypes(report.byBizType, ALERT_FAILING_LIMIT).map((b) => ({
      bizType: b.bizType,
      failed: b.failed,
      failedOpen: b.failedOpen,
      sample: b.sample && {
        id: b.sample.id,
        bizId: b.sample.bizId,
        eventId: b.sample.eventId,
        error: b.sample.error,
      },
    })),
    notes: report.notes,
  };
}

function failingLines(alert: Alert, bullet: string, code: (s: string) => string): string[] {
  return alert.failing.map((f) => {
    const counts = `${f.failed ?? 'n/a'} failed in window, ${f.failedOpen ?? 'n/a'} awaiting action`;
    const sample = f.sample
      ? ` — biz_id ${code(f.sample.bizId ?? '-')}, event_id ${code(f.sample.eventId ?? '-')}: ${firstLine(f.sample.error, ALERT_ERROR_CHARS)}`
      : '';
    return `${bullet}${f.bizType ?? '(no biz type)'}: ${counts}${sample}`;
  });
}

/** Markdown as WeCom and DingTalk render it. */
export function markdownText(alert: Alert): string {
  const lines = [`### ${alert.title}`, `> ${alert.summary}`];
  if (alert.breaches.length) lines.push('', '**Breaches**', ...alert.breaches.map((b) => `- ${b}`));
  if (alert.failing.length)
    lines.push('', '**Failing biz types**', ...failingLines(alert, '- ', (s) => `\`${s}\``));
  lines.push('', `<font color="comment">${alert.now} · taskrecon report</font>`);
  return lines.join('\n');
}

/** Plain text (Feishu's text message). */
export function plainText(alert: Alert): string {
  const lines = [alert.title, alert.summary];
  if (alert.failing.length) lines.push('Failing biz types:', ...failingLines(alert, '- ', (s) => s));
  lines.push(`${alert.now} · taskrecon report`);
  return lines.join('\n');
}

/** Slack mrkdwn. */
export function slackText(alert: Alert): string {
  const lines = [`*${alert.title}*`, alert.summary];
  if (alert.failing.length)
    lines.push('*Failing biz types*', ...failingLines(alert, '• ', (s) => `\`${s}\``));
  lines.push(`_${alert.now} · taskrecon report_`);
  return lines.join('\n');
}
