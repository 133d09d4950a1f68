import { sqlStore } from '../sql-store.js';
import type { AuditStore } from './audit.js';
import type { DiffStore } from './diff.js';
import type { DoctorStore } from './doctor.js';
import type { IntentStore } from './intents.js';
import type { SandboxStore } from './sandbox.js';
import type { StateStore } from './state.js';
import type { TaskStore } from './tasks.js';

/**
 * The storage port: everything above db/ (verbs, ops, commands, brokers, dispatch; the console
 * through the verbs) reads and writes through these interfaces, never through the statement
 * modules of db/sql/. The SQL store (db/sql-store.ts) implements them for MySQL/MariaDB and SQLite
 * by calling those statements; another layout of the tasks (another engine, tasks spread over
 * shards) is one more implementation of the same interfaces, installed with useStore().
 */
export interface Store {
  tasks: TaskStore;
  audit: AuditStore;
  intents: IntentStore;
  state: StateStore;
  diff: DiffStore;
  sandbox: SandboxStore;
  doctor: DoctorStore;
}

export type { AuditStore, DiffStore, DoctorStore, IntentStore, SandboxStore, StateStore, TaskStore };
export type { ClaimStore, SettleStore } from './tasks.js';

/** What one compensation batch needs: lock and re-read rows, write them guarded, audit, in one transaction. */
export interface CompensateStore {
  tasks: Pick<
    TaskStore,
    | 'transaction'
    | 'selectWholeRows'
    | 'selectWrittenColumns'
    | 'deleteGuarded'
    | 'applyTransition'
    | 'executionWrite'
  >;
  audit: Pick<AuditStore, 'insertBatch'>;
}

/** The store every statement goes through (the SQL store unless another is installed). */
export let store: Store = sqlStore;

/** Installs another store for the rest of the process (before any command runs). */
export function useStore(next: Store): void {
  store = next;
}

export { sqlStore };

// The vocabulary of the port: the rows, filters and cursors its methods take and return.
export type { AckInsert, AckRow } from '../sql/acks.js';
export type { AuditFilter, AuditInsert, AuditRecord } from '../sql/audit.js';
export type { BatchJob, JobBatchBefore } from '../sql/audit-batch.js';
export type { ClaimBatch, ClaimCursor, ClaimedTask, ClaimKind, ClaimRequest } from '../sql/claims.js';
export type { CandidateCursor, IdRange, ManualFilter, QueueJobInsert } from '../sql/compensate.js';
export type { IntentFilter, IntentInsert, IntentRecord, IntentState } from '../sql/intents.js';
export type { PushMarker } from '../sql/push-markers.js';
export type { ConsoleAuditFilter } from '../sql/console-audit.js';
export type { ErrorCount } from '../sql/console-errors.js';
export type { ListCursor } from '../sql/console-list.js';
export type { NewTask } from '../sql/create-missing.js';
export type { DemoBizType, DemoTaskRow } from '../sql/demo.js';
export type {
  CrossBusinessRow,
  CrossBusinessSide,
  CrossTaskRow,
  CrossTaskSide,
  DigestRow,
  NullKeyTaskRow,
  NullKeyTaskSide,
} from '../sql/diff-checksum.js';
export type { RangeDigest } from '../sql/diff-merge.js';
export type {
  BusinessSide,
  CandidateRow,
  IdRange as ChunkRange,
  MissingRow,
  OrphanRow,
  SiblingRow,
  TaskSide,
} from '../sql/diff.js';
export type { EffectTaskSide, KeyRowCount, KeyTaskCount } from '../sql/effect.js';
export type { LongTransaction, ServerClock, TableBloat } from '../sql/doctor.js';
export type { DrillTaskInsert, DrillTaskRow, EffectTable } from '../sql/drill.js';
export type { SnapshotRow } from '../sql/queue-snapshot.js';
export type { LatencyBucketRow } from '../sql/report.js';
export type { EffectDelivery } from '../sql/reference-effect.js';
export type { CountRow, ListEncoder, ListKind, ListReadOptions, StatusCountRow } from '../sql/scan.js';
export type { FailedPage, IdentityAudit } from '../sql/sweep.js';
export type { ClaimFence, TransitionWrite } from '../sql/transitions.js';
export type { ScanFilter } from '../fragment.js';

// Constants and pure helpers (no statement runs): names, columns, fragments, text.
export { AUDIT_WRITE_COLUMNS } from '../sql/audit.js';
export { expandAuditRecord, JOB_BATCH_TASK_ID } from '../sql/audit-batch.js';
export { idRangeWhere } from '../sql/compensate.js';
export { CREATE_FIELDS } from '../sql/create-missing.js';
export { DEMO_BUSINESS_DDL, isDemoBizType } from '../sql/demo.js';
export { utf8Collation } from '../sql/diff-checksum.js';
export { businessRefs } from '../sql/diff-schema.js';
export { isIntegerType } from '../sql/diff-keys.js';
export { ROLE_DONE, ROLE_OPEN } from '../sql/diff.js';
export { EFFECT_KEY, EFFECT_TABLE } from '../sql/reference-effect.js';
export { dueWhere, LIST_STATUS, stuckWhere } from '../sql/scan.js';
export { and, filterWhere } from '../fragment.js';
export { SWEEP_DEMO_DDL, SWEEP_DEMO_RULES, SWEEP_DEMO_SOURCE } from '../sql/sweep-demo.js';
export { SWEEP_ALERT_ACTION, SWEEP_COLUMNS, SWEEP_RETRY_ACTION } from '../sql/sweep.js';
export { lastErrorLimit, truncateError } from '../sql/transitions.js';
