/** report: the health report against its thresholds, and its notifications. */
export * from './report.js';
export { notifyReport } from './notify.js';
