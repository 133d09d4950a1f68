// Over 300 lines: the one table of every statement module the port exposes, listed in full.
import type { Store } from './port/index.js';
import { ackTableExists, endAck, ensureAckTable, insertAck, selectAck, selectAcks } from './sql/acks.js';
import { selectRunIdsByPrefix } from './sql/audit-runs.js';
import {
  auditTableExists,
  insertAudit,
  insertAuditBatch,
  selectAuditPage,
  selectLatestAudit,
  selectRemovals,
} from './sql/audit.js';
import { bizTypeExists, selectBizTypes } from './sql/biz-types.js';
import {
  claimBatch,
  countClaimable,
  countUnhandled,
  detectSkipLocked,
  heldClaims,
  txNow,
} from './sql/claims.js';
import {
  countCandidates,
  deleteGuarded,
  insertQueueJob,
  selectCandidatePage,
  selectCandidateTasks,
  selectWholeRows,
  selectWrittenColumns,
} from './sql/compensate.js';
import { selectAuditIdsBefore } from './sql/console-audit.js';
import { countList, countListByError } from './sql/console-errors.js';
import { selectListIds, selectListPage, selectTasksByIds } from './sql/console-list.js';
import { selectSnapshotsSince } from './sql/console-snapshots.js';
import { loadTrend, selectTrendBuckets } from './sql/console-trends.js';
import { insertTaskIfAbsent, selectBusinessColumns } from './sql/create-missing.js';
import { executionWrite } from './sql/executions.js';
import {
  applyDemoEffectOnce,
  demoSamples,
  insertDemoEffect,
  insertDemoTask,
  isDemoSandbox,
  markSandbox,
} from './sql/demo.js';
import {
  businessDigests,
  businessHashStream,
  businessRows,
  countTasks,
  notDoneHashes,
  nullKeyTasks,
  taskDigests,
  taskHashStream,
  taskRows,
} from './sql/diff-checksum.js';
import {
  businessRangeDigest,
  businessWeights,
  spaceWeight,
  taskRangeDigest,
  taskWeights,
} from './sql/diff-merge.js';
import { withReadOnly } from './sql/diff-readonly.js';
import { businessRowCounts, taskKeyCounts } from './sql/effect.js';
import { bizTypeHasTasks, columnCollation, integerPrimaryKey, probeWhere } from './sql/diff-schema.js';
import {
  businessKeyBound,
  countChunkTasks,
  duplicateCandidates,
  duplicateKeys,
  keySiblings,
  missingByIds,
  missingChunk,
  nextTaskId,
  nullKeyBusinessRows,
  orphanChunk,
  orphansByKeys,
  taskIdRange,
  unsettledCandidates,
} from './sql/diff.js';
import { retryTimesOnTheMinute, serverWaitTimeout } from './sql/doctor-pitfalls.js';
import {
  explain,
  longTransactions,
  planLines,
  probeSkipLocked,
  readPlan,
  serverClock,
  statusValueCounts,
  tableBloat,
  wallClockToInstantStatement,
} from './sql/doctor.js';
import {
  ageClaim,
  countDrillTasks,
  countEffects,
  deleteDrillEffects,
  deleteDrillTasks,
  drillRunFilter,
  fastForwardRetry,
  insertDrillTask,
  readDrillTask,
} from './sql/drill.js';
import { extendLease } from './sql/heartbeat.js';
import {
  ensureIntentTable,
  insertIntent,
  intentTableExists,
  selectIntents,
  settleIntent,
} from './sql/intents.js';
import {
  deletePushMarker,
  insertPushMarker,
  pushMarkerTableExists,
  selectPushMarker,
} from './sql/push-markers.js';
import {
  insertSnapshots,
  pruneSnapshots,
  selectAnchors,
  selectDepthRangeAfter,
  selectRecent,
  snapshotTableExists,
} from './sql/queue-snapshot.js';
import { applyEffectEveryTime, applyEffectOnce, referenceEffectDdl } from './sql/reference-effect.js';
import { ensureNotifyTable, readNotified, writeNotified } from './sql/report-notify.js';
import { claimAlerts, ensureAlertClaimTable, settleAlertClaims } from './sql/alert-claim.js';
import {
  countFailedOpen,
  failedInWindow,
  latencyHistogram,
  latestFailure,
  queueHealth,
  windowAggregate,
} from './sql/report.js';
import { countByStatus, countByStatusAndBizType, estimatedRows } from './sql/scan-counts.js';
import { countDue, countStuck, listBatches, listEncoded, listRows, primaryKeyWalk } from './sql/scan.js';
import { selectTaskBy } from './sql/show.js';
import { addUniqueKeyStatement, createIndexStatement, modifyColumnStatement } from './sql/suggestions.js';
import { insertSweepDemoFailures } from './sql/sweep-demo.js';
import { countAuditByIdentity, selectAuditByIdentity, selectFailedPage } from './sql/sweep.js';
import { applyTransition, succeedClaimed } from './sql/transitions.js';

/**
 * The store of MySQL/MariaDB and SQLite: the port's methods are the statements of db/sql/, which
 * read the dialect of the connection they run on. Every task table lives whole in one database.
 */
export const sqlStore: Store = {
  tasks: {
    transaction: (source, fn) => source.db.transaction(fn),
    detectSkipLocked,
    claimBatch,
    heldClaims,
    countClaimable,
    countUnhandled,
    txNow,
    extendLease,
    applyTransition,
    succeedClaimed,
    countByStatus,
    countByStatusAndBizType,
    estimatedRows,
    countDue,
    countStuck,
    listBatches,
    listEncoded,
    primaryKeyWalk,
    listRows,
    selectTaskBy,
    bizTypeExists,
    selectBizTypes,
    selectCandidatePage,
    countCandidates,
    selectCandidateTasks,
    selectWholeRows,
    selectWrittenColumns,
    deleteGuarded,
    executionWrite,
    insertQueueJob,
    selectFailedPage,
    selectBusinessColumns,
    insertTaskIfAbsent,
    selectListPage,
    selectListIds,
    selectTasksByIds,
    countList,
    countListByError,
    windowAggregate,
    latencyHistogram,
    failedInWindow,
    countFailedOpen,
    latestFailure,
    queueHealth,
  },
  audit: {
    tableExists: auditTableExists,
    insert: insertAudit,
    insertBatch: insertAuditBatch,
    selectPage: selectAuditPage,
    selectLatest: selectLatestAudit,
    selectRemovals,
    selectRunIdsByPrefix,
    countByIdentity: countAuditByIdentity,
    selectByIdentity: selectAuditByIdentity,
    selectIdsBefore: selectAuditIdsBefore,
  },
  intents: {
    tableExists: intentTableExists,
    ensureTable: ensureIntentTable,
    insert: insertIntent,
    settle: settleIntent,
    select: selectIntents,
    markerTableExists: pushMarkerTableExists,
    insertMarker: insertPushMarker,
    selectMarker: selectPushMarker,
    deleteMarker: deletePushMarker,
  },
  state: {
    snapshotTableExists,
    insertSnapshots,
    selectAnchors,
    selectDepthRangeAfter,
    selectRecent,
    pruneSnapshots,
    selectSnapshotsSince,
    loadTrend,
    selectTrendBuckets,
    ensureNotifyTable,
    readNotified,
    writeNotified,
    ensureAlertClaimTable,
    claimAlerts,
    settleAlertClaims,
    ackTableExists,
    ensureAckTable,
    insertAck,
    selectAcks,
    selectAck,
    endAck,
  },
  diff: {
    withReadOnly,
    columnCollation,
    integerPrimaryKey,
    probeWhere,
    bizTypeHasTasks,
    spaceWeight,
    taskIdRange,
    nextTaskId,
    missingChunk,
    missingByIds,
    unsettledCandidates,
    countChunkTasks,
    keySiblings,
    businessKeyBound,
    orphanChunk,
    orphansByKeys,
    nullKeyBusinessRows,
    duplicateKeys,
    duplicateCandidates,
    businessWeights,
    taskWeights,
    taskRangeDigest,
    businessRangeDigest,
    taskDigests,
    businessDigests,
    taskHashStream,
    businessHashStream,
    countTasks,
    notDoneHashes,
    taskRows,
    businessRows,
    nullKeyTasks,
    businessRowCounts,
    taskKeyCounts,
  },
  sandbox: {
    isDemoSandbox,
    markSandbox,
    insertDemoTask,
    insertDemoEffect,
    applyDemoEffectOnce,
    demoSamples,
    insertSweepDemoFailures,
    drillRunFilter,
    insertDrillTask,
    readDrillTask,
    fastForwardRetry,
    ageClaim,
    countDrillTasks,
    deleteDrillTasks,
    countEffects,
    deleteDrillEffects,
    referenceEffectDdl,
    applyEffectOnce,
    applyEffectEveryTime,
  },
  doctor: {
    serverClock,
    probeSkipLocked,
    statusValueCounts,
    explain,
    readPlan,
    planLines,
    tableBloat,
    longTransactions,
    wallClockToInstantStatement,
    retryTimesOnTheMinute,
    serverWaitTimeout,
    createIndexStatement,
    modifyColumnStatement,
    addUniqueKeyStatement,
  },
};
