import type * as bizTypes from '../sql/biz-types.js';
import type * as claims from '../sql/claims.js';
import type * as compensate from '../sql/compensate.js';
import type * as consoleErrors from '../sql/console-errors.js';
import type * as consoleList from '../sql/console-list.js';
import type * as createMissing from '../sql/create-missing.js';
import type * as executions from '../sql/executions.js';
import type * as heartbeat from '../sql/heartbeat.js';
import type * as report from '../sql/report.js';
import type * as scanCounts from '../sql/scan-counts.js';
import type * as scan from '../sql/scan.js';
import type * as show from '../sql/show.js';
import type * as sweep from '../sql/sweep.js';
import type * as transitions from '../sql/transitions.js';
import type { BoundSource } from '../bind-source.js';
import type { Queryable } from '../types.js';

/**
 * The task table: claims and their leases, the state machine's writes, scans and lists, manual
 * selections, report counts. Each method takes the source (and, inside a transaction, the
 * transaction it runs on), so one store serves every source of a run.
 */
export interface TaskStore {
  /** Runs `fn` in one short transaction on the source's task database; commits when it resolves. */
  transaction<T>(source: BoundSource, fn: (tx: Queryable) => Promise<T>): Promise<T>;

  // Claims, leases and transitions (redrive).
  detectSkipLocked: typeof claims.detectSkipLocked;
  claimBatch: typeof claims.claimBatch;
  heldClaims: typeof claims.heldClaims;
  countClaimable: typeof claims.countClaimable;
  countUnhandled: typeof claims.countUnhandled;
  txNow: typeof claims.txNow;
  extendLease: typeof heartbeat.extendLease;
  applyTransition: typeof transitions.applyTransition;
  succeedClaimed: typeof transitions.succeedClaimed;

  // Scan: counts and lists.
  countByStatus: typeof scanCounts.countByStatus;
  countByStatusAndBizType: typeof scanCounts.countByStatusAndBizType;
  estimatedRows: typeof scanCounts.estimatedRows;
  countDue: typeof scan.countDue;
  countStuck: typeof scan.countStuck;
  listBatches: typeof scan.listBatches;
  listEncoded: typeof scan.listEncoded;
  primaryKeyWalk: typeof scan.primaryKeyWalk;
  listRows: typeof scan.listRows;
  selectTaskBy: typeof show.selectTaskBy;
  bizTypeExists: typeof bizTypes.bizTypeExists;
  selectBizTypes: typeof bizTypes.selectBizTypes;

  // Manual selections and writes (compensate, sweep, the console).
  selectCandidatePage: typeof compensate.selectCandidatePage;
  countCandidates: typeof compensate.countCandidates;
  selectCandidateTasks: typeof compensate.selectCandidateTasks;
  selectWholeRows: typeof compensate.selectWholeRows;
  selectWrittenColumns: typeof compensate.selectWrittenColumns;
  deleteGuarded: typeof compensate.deleteGuarded;
  /** A job system kept by executions (Solid Queue): retry or forget failed jobs as its models do. */
  executionWrite: typeof executions.executionWrite;
  insertQueueJob: typeof compensate.insertQueueJob;
  selectFailedPage: typeof sweep.selectFailedPage;
  selectBusinessColumns: typeof createMissing.selectBusinessColumns;
  insertTaskIfAbsent: typeof createMissing.insertTaskIfAbsent;
  selectListPage: typeof consoleList.selectListPage;
  selectListIds: typeof consoleList.selectListIds;
  selectTasksByIds: typeof consoleList.selectTasksByIds;
  countList: typeof consoleErrors.countList;
  countListByError: typeof consoleErrors.countListByError;

  // Report counts.
  windowAggregate: typeof report.windowAggregate;
  latencyHistogram: typeof report.latencyHistogram;
  failedInWindow: typeof report.failedInWindow;
  countFailedOpen: typeof report.countFailedOpen;
  latestFailure: typeof report.latestFailure;
  queueHealth: typeof report.queueHealth;
}

/** What the feeder of a redrive needs: claim the next page. */
export type ClaimStore = Pick<TaskStore, 'claimBatch'>;

/** What the settler of a redrive needs: fenced outcomes written in short transactions. */
export type SettleStore = Pick<
  TaskStore,
  'transaction' | 'heldClaims' | 'txNow' | 'applyTransition' | 'succeedClaimed'
>;
