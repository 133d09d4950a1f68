/** audit: the taskrecon_audit trail, read back (latest, streamed, per task) and required before a write. */
export * from './audit.js';
export { resolveRunId } from './run-prefix.js';
export { auditPage, type AuditPage, type AuditPageFilter } from './page.js';
export { shardAudit, type ShardAuditEntry } from './shards.js';
