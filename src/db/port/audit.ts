import type * as auditRuns from '../sql/audit-runs.js';
import type * as audit from '../sql/audit.js';
import type * as consoleAudit from '../sql/console-audit.js';
import type * as sweep from '../sql/sweep.js';

/** The audit log (`taskrecon_audit`): appended to, read back, never updated. */
export interface AuditStore {
  tableExists: typeof audit.auditTableExists;
  insert: typeof audit.insertAudit;
  insertBatch: typeof audit.insertAuditBatch;
  selectPage: typeof audit.selectAuditPage;
  selectLatest: typeof audit.selectLatestAudit;
  selectRemovals: typeof audit.selectRemovals;
  selectRunIdsByPrefix: typeof auditRuns.selectRunIdsByPrefix;
  countByIdentity: typeof sweep.countAuditByIdentity;
  selectByIdentity: typeof sweep.selectAuditByIdentity;
  selectIdsBefore: typeof consoleAudit.selectAuditIdsBefore;
}
