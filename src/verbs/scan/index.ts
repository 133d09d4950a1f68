/** scan: counts and lists of the task table, and the source facts every verb reports. */
export * from './scan.js';
export { scanRequest, type ScanFlags } from './request.js';
export { unknownBizTypeWarnings } from '../../ops/biz-type-check.js';
export { errorAndQueueFilter, type TextAndQueueFlags } from '../../ops/text-filters.js';
export {
  listIds,
  listPage,
  listStatus,
  tasksByIds,
  type ListCursor,
  type ListFilter,
  type ListKind,
  type ListPage,
} from './list-page.js';
export { listErrors, type ListErrors } from './list-errors.js';
export { scanShards, type ShardedScanResult, type ShardTask } from './shards.js';
export { shardOverview, type ShardOverview, type ShardOverviewEntry } from './shard-overview.js';
export { SCAN_FLAGS } from './flags.js';
