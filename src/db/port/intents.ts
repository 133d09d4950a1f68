import type * as intents from '../sql/intents.js';

/**
 * The write-ahead intents (`taskrecon_intent`): opened and committed before a batch touches a
 * broker, settled once (guarded on `open`) in the transaction of the batch's audit rows.
 */
export interface IntentStore {
  tableExists: typeof intents.intentTableExists;
  ensureTable: typeof intents.ensureIntentTable;
  insert: typeof intents.insertIntent;
  settle: typeof intents.settleIntent;
  select: typeof intents.selectIntents;
}
