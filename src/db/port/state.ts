import type * as alertClaim from '../sql/alert-claim.js';
import type * as acks from '../sql/acks.js';
import type * as consoleSnapshots from '../sql/console-snapshots.js';
import type * as consoleTrends from '../sql/console-trends.js';
import type * as queueSnapshot from '../sql/queue-snapshot.js';
import type * as reportNotify from '../sql/report-notify.js';

/**
 * taskrecon's own state beside the tasks: queue snapshots, trends, what a report already notified,
 * which sweep claimed which second-failure alert, acknowledged findings.
 */
export interface StateStore {
  snapshotTableExists: typeof queueSnapshot.snapshotTableExists;
  insertSnapshots: typeof queueSnapshot.insertSnapshots;
  selectAnchors: typeof queueSnapshot.selectAnchors;
  selectDepthRangeAfter: typeof queueSnapshot.selectDepthRangeAfter;
  selectRecent: typeof queueSnapshot.selectRecent;
  pruneSnapshots: typeof queueSnapshot.pruneSnapshots;
  selectSnapshotsSince: typeof consoleSnapshots.selectSnapshotsSince;
  loadTrend: typeof consoleTrends.loadTrend;
  selectTrendBuckets: typeof consoleTrends.selectTrendBuckets;
  ensureNotifyTable: typeof reportNotify.ensureNotifyTable;
  readNotified: typeof reportNotify.readNotified;
  writeNotified: typeof reportNotify.writeNotified;
  ensureAlertClaimTable: typeof alertClaim.ensureAlertClaimTable;
  claimAlerts: typeof alertClaim.claimAlerts;
  settleAlertClaims: typeof alertClaim.settleAlertClaims;
  ackTableExists: typeof acks.ackTableExists;
  ensureAckTable: typeof acks.ensureAckTable;
  insertAck: typeof acks.insertAck;
  selectAcks: typeof acks.selectAcks;
  selectAck: typeof acks.selectAck;
  endAck: typeof acks.endAck;
}
