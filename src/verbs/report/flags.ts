import { Flags } from '../../core/oclif.js';
import { durationFlag, shardFlags } from '../../flags.js';
import { TREND_SPAN_NAMES } from './trend.js';

export const REPORT_FORMATS = ['table', 'json', 'prometheus', 'nagios'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

/** The flags of `report`; their values are checked by reportRequest(). */
export const REPORT_FLAGS = {
  ...shardFlags,
  window: durationFlag({
    summary: 'Metrics over tasks created in this window (default 1h, or report.window).',
  }),
  'biz-type': Flags.string({ summary: 'Only these biz types.', multiple: true }),
  'stuck-after': durationFlag({
    summary: "A processing task untouched this long is stuck (default: the profile's lease).",
  }),
  threshold: Flags.string({
    summary:
      'Override a threshold: METRIC.LEVEL=VALUE, e.g. failureRate.crit=10%, stuck.warn=5, oldestDue.warn=off.',
    multiple: true,
  }),
  format: Flags.string({ summary: 'Output format.', options: [...REPORT_FORMATS] }),
  output: Flags.string({
    summary:
      'Write the output to this file atomically (temp file + rename), e.g. for the node_exporter textfile collector.',
  }),
  'exit-status': Flags.boolean({
    summary:
      'With --output: exit with the verdict (0 OK, 1 WARNING, 2 CRITICAL) instead of 0 once the file is written.',
    dependsOn: ['output'],
  }),
  notify: Flags.boolean({
    summary: 'Send the alert to the webhooks configured under report.notify (and any --webhook).',
  }),
  webhook: Flags.string({
    summary: 'A webhook to notify: KIND=URL (wecom, dingtalk, feishu, slack, generic); implies --notify.',
    multiple: true,
  }),
  'notify-cooldown': durationFlag({
    summary:
      'Repeat a persisting, unchanged breach only after this long (default 1h, or report.notifyCooldown).',
  }),
  'notify-timeout': durationFlag({ summary: 'Give up on a webhook after this long (default 5s).' }),
  trend: Flags.string({
    summary: 'Also show created, failed, failure rate and latency per bucket over 24h or 7d (sparklines).',
    options: [...TREND_SPAN_NAMES],
  }),
  'full-scan': Flags.boolean({
    summary: 'On a large table, also compute the figures no index serves, reading the whole table for them.',
    description:
      'Without it, a figure that would read the whole table (no index serves it, ≥ 100,000 rows) is skipped and a note names the index that would serve it (taskrecon doctor prints the CREATE INDEX).',
  }),
};
