import type { DialectDdl } from '../../dialect.js';

/** The engine's identifier quoting (the dialect's quoteId). */
export const quoteSqliteId = (identifier: string): string => '"' + identifier.replace(/"/g, '""') + '"';

/** SQLite's DDL: INTEGER PRIMARY KEY AUTOINCREMENT, separate CREATE INDEX statements. */
export const sqliteDdl: DialectDdl = {
  asyncTask: (t, table) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  biz_type VARCHAR(32) NOT NULL,
  biz_id VARCHAR(64) NOT NULL,
  event_id VARCHAR(64) NOT NULL UNIQUE,
  payload JSON,
  status TINYINT NOT NULL DEFAULT 0,
  retry_count INT NOT NULL DEFAULT 0,
  next_retry_time DATETIME NOT NULL DEFAULT (datetime('now')),
  last_error VARCHAR(512),
  created_at DATETIME NOT NULL DEFAULT (datetime('now')),
  updated_at DATETIME NOT NULL DEFAULT (datetime('now'))
)`,
    `CREATE INDEX IF NOT EXISTS ${quoteSqliteId(`idx_${table}_status_next_retry`)} ON ${t} (status, next_retry_time)`,
    `CREATE INDEX IF NOT EXISTS ${quoteSqliteId(`idx_${table}_biz`)} ON ${t} (biz_type, biz_id)`,
  ],
  jobRetries: (t, table) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id VARCHAR(64) NOT NULL,
  task_name VARCHAR(100),
  payload TEXT,
  attempts INT DEFAULT 0,
  max_attempts INT DEFAULT 3,
  last_error TEXT,
  next_retry_at DATETIME,
  status TEXT CHECK (status IN ('pending','retrying','failed')) DEFAULT 'pending'
)`,
    `CREATE INDEX IF NOT EXISTS ${quoteSqliteId(`idx_${table}_next_retry`)} ON ${t} (next_retry_at, status)`,
  ],
  audit: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  operator VARCHAR(128) NOT NULL,
  host VARCHAR(128) NOT NULL,
  action VARCHAR(32) NOT NULL,
  source VARCHAR(64) NOT NULL,
  task_table VARCHAR(64) NOT NULL,
  task_id VARCHAR(64) NOT NULL,
  event_id VARCHAR(64),
  from_status VARCHAR(16),
  to_status VARCHAR(16),
  before_json TEXT,
  after_json TEXT,
  reason TEXT,
  run_id VARCHAR(40) NOT NULL
)`,
    `CREATE INDEX IF NOT EXISTS idx_taskrecon_audit_task ON ${t} (source, task_id)`,
    // A task's history is read by its table (whatever the source is named): `show`, `audit --task`.
    `CREATE INDEX IF NOT EXISTS idx_taskrecon_audit_table_task ON ${t} (task_table, task_id)`,
    `CREATE INDEX IF NOT EXISTS idx_taskrecon_audit_created ON ${t} (created_at)`,
    // The sweep counts a job's earlier sweeps by its identity in event_id.
    `CREATE INDEX IF NOT EXISTS idx_taskrecon_audit_event ON ${t} (event_id)`,
  ],
  notify: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  source VARCHAR(64) NOT NULL,
  target VARCHAR(64) NOT NULL,
  status VARCHAR(16) NOT NULL,
  fingerprint VARCHAR(512) NOT NULL,
  notified_at BIGINT NOT NULL,
  PRIMARY KEY (source, target)
)`,
  ],
  alertClaim: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  task_table VARCHAR(191) NOT NULL,
  event_id VARCHAR(191) NOT NULL,
  run_id VARCHAR(40) NOT NULL,
  claimed_at BIGINT NOT NULL,
  sent SMALLINT NOT NULL DEFAULT 0,
  PRIMARY KEY (task_table, event_id)
)`,
  ],
  queueSnapshot: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  broker VARCHAR(64) NOT NULL,
  queue VARCHAR(191) NOT NULL,
  depth BIGINT NOT NULL,
  ready BIGINT NOT NULL,
  at_epoch BIGINT NOT NULL
)`,
    `CREATE INDEX IF NOT EXISTS idx_taskrecon_queue_snapshot_at ON ${t} (broker, queue, at_epoch)`,
  ],
  intent: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id VARCHAR(40) NOT NULL,
  kind VARCHAR(32) NOT NULL,
  source VARCHAR(64) NOT NULL,
  from_ref VARCHAR(255) NOT NULL,
  to_ref VARCHAR(255) NOT NULL,
  operator VARCHAR(128) NOT NULL,
  host VARCHAR(128) NOT NULL,
  action VARCHAR(32) NOT NULL,
  reason TEXT,
  jobs TEXT NOT NULL,
  detail TEXT,
  state VARCHAR(16) NOT NULL DEFAULT 'open',
  opened_epoch BIGINT NOT NULL,
  settled_epoch BIGINT,
  settled_run VARCHAR(40)
)`,
    `CREATE INDEX IF NOT EXISTS idx_taskrecon_intent_state ON ${t} (state, kind)`,
    `CREATE INDEX IF NOT EXISTS idx_taskrecon_intent_run ON ${t} (run_id)`,
  ],
  pushMarker: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  run_id VARCHAR(40) NOT NULL,
  intent_id BIGINT NOT NULL,
  state VARCHAR(16) NOT NULL,
  jobs TEXT NOT NULL,
  created_epoch BIGINT NOT NULL,
  PRIMARY KEY (run_id, intent_id)
)`,
  ],
  ack: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  code VARCHAR(32) NOT NULL,
  broker VARCHAR(64) NOT NULL,
  queue VARCHAR(191) NOT NULL,
  reason TEXT NOT NULL,
  operator VARCHAR(128) NOT NULL,
  created_epoch BIGINT NOT NULL,
  until_epoch BIGINT NOT NULL,
  ended_epoch BIGINT NULL,
  run_id VARCHAR(40) NOT NULL
)`,
    `CREATE INDEX IF NOT EXISTS idx_taskrecon_ack_until ON ${t} (until_epoch)`,
  ],
  referenceEffect: (effect, processed) => [
    `CREATE TABLE IF NOT EXISTS ${effect} (id INTEGER PRIMARY KEY AUTOINCREMENT, order_id VARCHAR(64) NOT NULL,
         coupon_template_id VARCHAR(32) NOT NULL, event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT (datetime('now')))`,
    `CREATE INDEX IF NOT EXISTS idx_${effect}_order ON ${effect} (order_id)`,
    `CREATE TABLE IF NOT EXISTS ${processed} (event_id VARCHAR(64) PRIMARY KEY, processed_at DATETIME NOT NULL DEFAULT (datetime('now')))`,
  ],
};
