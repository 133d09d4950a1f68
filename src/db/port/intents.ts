import type * as intents from '../sql/intents.js';
import type * as markers from '../sql/push-markers.js';

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
  /** The markers of re-pushes into a queue table of another database (`taskrecon_push_marker`). */
  markerTableExists: typeof markers.pushMarkerTableExists;
  insertMarker: typeof markers.insertPushMarker;
  selectMarker: typeof markers.selectPushMarker;
  deleteMarker: typeof markers.deletePushMarker;
}
