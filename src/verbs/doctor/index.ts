/** doctor: can taskrecon trust this table, this server and these rules. */
export * from './doctor.js';
export { brokerDoctorChecks, withBrokerChecks } from './queues.js';
export { openMoveIntentChecks } from './move-intents.js';
export { LONG_TRANSACTION_SECONDS } from './vacuum.js';
export { runDoctorShards, type ShardedDoctorResult } from './shards.js';
