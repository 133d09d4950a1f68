import type { ReportResult } from '../core/report.js';
import type { Trend } from '../core/trend.js';
import type { QueueReportSection } from '../verbs/queues/index.js';
import { renderNagios } from './nagios.js';
import { prometheusFamilies, renderFamilies } from './prometheus.js';
import { queuePrometheusFamilies, renderQueueReport } from './queues.js';
import { renderReport } from './report.js';
import { renderTrend } from './trend.js';

/** The report with its optional sections, as the text of one output format. */
export type FullReport = ReportResult & { queues?: QueueReportSection; trend?: Trend };

/** The whole report in one format: prometheus, nagios, json, or the table (with queues and trend). */
export function renderReportAs(
  format: 'table' | 'json' | 'prometheus' | 'nagios',
  result: FullReport,
): string {
  const { queues, trend } = result;
  if (format === 'prometheus')
    return renderFamilies([
      ...prometheusFamilies(result),
      ...(queues ? queuePrometheusFamilies(queues) : []),
    ]);
  if (format === 'nagios') return `${renderNagios(result)}\n`;
  if (format === 'json') return `${JSON.stringify(result, null, 2)}\n`;
  return `${renderReport(result)}\n${queues ? `${renderQueueReport(queues)}\n` : ''}${trend ? `${renderTrend(trend)}\n` : ''}`;
}
