export {
  listOpenIntents,
  openIntent,
  requireIntentTable,
  settleIntentWithAudit,
  settledByJson,
  settleOpenIntents,
  type IntentLook,
  type IntentMeta,
  type OpenedIntent,
  type Settlement,
  type SettledIntent,
  type SettleSummary,
} from './store.js';
