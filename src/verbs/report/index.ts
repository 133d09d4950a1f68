/** report: the health report against its thresholds, and its notifications. */
export * from './report.js';
export { notifyReport } from './notify.js';
export { REPORT_FLAGS, REPORT_FORMATS, type ReportFormat } from './flags.js';
export { checkReportSource, DEFAULT_WINDOW, reportRequest, type ReportRequest } from './request.js';
export { writeDownFile } from './prometheus-state.js';
export { allTrends, reportTrend } from './trend.js';
export { allShardTrends } from './shards.js';
export { runReport, type FullReport, type ReportRun } from './orchestrate.js';
