import type * as pitfalls from '../sql/doctor-pitfalls.js';
import type * as doctor from '../sql/doctor.js';
import type * as suggestions from '../sql/suggestions.js';

/** What doctor probes on a server and a table, and the statements it suggests (never runs). */
export interface DoctorStore {
  serverClock: typeof doctor.serverClock;
  probeSkipLocked: typeof doctor.probeSkipLocked;
  statusValueCounts: typeof doctor.statusValueCounts;
  explain: typeof doctor.explain;
  readPlan: typeof doctor.readPlan;
  planLines: typeof doctor.planLines;
  tableBloat: typeof doctor.tableBloat;
  longTransactions: typeof doctor.longTransactions;
  wallClockToInstantStatement: typeof doctor.wallClockToInstantStatement;
  retryTimesOnTheMinute: typeof pitfalls.retryTimesOnTheMinute;
  serverWaitTimeout: typeof pitfalls.serverWaitTimeout;
  createIndexStatement: typeof suggestions.createIndexStatement;
  modifyColumnStatement: typeof suggestions.modifyColumnStatement;
  addUniqueKeyStatement: typeof suggestions.addUniqueKeyStatement;
}
