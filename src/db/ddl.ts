import type { Dialect } from './dialect.js';

/**
 * DDL for the tables taskrecon can create (`init`): the reference task tables of the seeds and
 * taskrecon's own tables. One function per table, per dialect; `table` is quoted by the caller's dialect.
 */
export type DdlProfile = 'async-task' | 'job-retries';

/** The classic task-table design, with the (status, next_retry_time) index the scan reads through. */
export function asyncTaskDdl(dialect: Dialect, table = 'async_task'): string[] {
  const t = dialect.quoteId(table);
  if (dialect.name === 'sqlite') {
    return [
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
      `CREATE INDEX IF NOT EXISTS ${dialect.quoteId(`idx_${table}_status_next_retry`)} ON ${t} (status, next_retry_time)`,
      `CREATE INDEX IF NOT EXISTS ${dialect.quoteId(`idx_${table}_biz`)} ON ${t} (biz_type, biz_id)`,
    ];
  }
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  biz_type VARCHAR(32) NOT NULL COMMENT 'payment, sms, refund, ...',
  biz_id VARCHAR(64) NOT NULL COMMENT 'the business document this task belongs to',
  event_id VARCHAR(64) NOT NULL COMMENT 'globally unique; consumers deduplicate on it',
  payload JSON NULL COMMENT 'the complete request, so a retry is self-contained',
  status TINYINT NOT NULL DEFAULT 0 COMMENT '0 pending, 1 processing, 2 success, 3 failed, 4 compensated',
  retry_count INT NOT NULL DEFAULT 0,
  next_retry_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  last_error VARCHAR(512) NULL,
  created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  UNIQUE KEY uk_event_id (event_id),
  KEY idx_status_next_retry (status, next_retry_time),
  KEY idx_biz (biz_type, biz_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ];
}

/** job_retries, as the job-retries design defines it. */
export function jobRetriesDdl(dialect: Dialect, table = 'job_retries'): string[] {
  const t = dialect.quoteId(table);
  if (dialect.name === 'sqlite') {
    return [
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
      `CREATE INDEX IF NOT EXISTS ${dialect.quoteId(`idx_${table}_next_retry`)} ON ${t} (next_retry_at, status)`,
    ];
  }
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id INT AUTO_INCREMENT PRIMARY KEY,
  job_id VARCHAR(64) NOT NULL,
  task_name VARCHAR(100),
  payload TEXT,
  attempts INT DEFAULT 0,
  max_attempts INT DEFAULT 3,
  last_error TEXT,
  next_retry_at DATETIME,
  status ENUM('pending','retrying','failed') DEFAULT 'pending',
  INDEX idx_next_retry (next_retry_at, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ];
}

export const AUDIT_TABLE = 'taskrecon_audit';

/**
 * The append-only audit log: who did what to which task, before and after, and why. Written in
 * the same transaction as the change it records; taskrecon never updates or deletes its rows.
 */
export function auditDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(AUDIT_TABLE);
  if (dialect.name === 'sqlite') {
    return [
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
    ];
  }
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  operator VARCHAR(128) NOT NULL,
  host VARCHAR(128) NOT NULL,
  action VARCHAR(32) NOT NULL,
  source VARCHAR(64) NOT NULL,
  task_table VARCHAR(64) NOT NULL,
  task_id VARCHAR(64) NOT NULL,
  event_id VARCHAR(64) NULL,
  from_status VARCHAR(16) NULL,
  to_status VARCHAR(16) NULL,
  before_json LONGTEXT NULL,
  after_json LONGTEXT NULL,
  reason TEXT NULL,
  run_id VARCHAR(40) NOT NULL,
  PRIMARY KEY (id),
  KEY idx_task (source, task_id),
  KEY idx_table_task (task_table, task_id),
  KEY idx_created (created_at),
  KEY idx_operator (operator, created_at),
  KEY idx_event (event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ];
}

export const NOTIFY_TABLE = 'taskrecon_notify';

/**
 * What `report --notify` last sent to each webhook target, per source: the status, the breached
 * metrics and when. It keeps a persisting breach from notifying on every run (the cooldown).
 * Times are epoch seconds from the database clock. Targets are keyed by a hash, never by their URL.
 */
export function notifyDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(NOTIFY_TABLE);
  if (dialect.name === 'sqlite') {
    return [
      `CREATE TABLE IF NOT EXISTS ${t} (
  source VARCHAR(64) NOT NULL,
  target VARCHAR(64) NOT NULL,
  status VARCHAR(16) NOT NULL,
  fingerprint VARCHAR(512) NOT NULL,
  notified_at BIGINT NOT NULL,
  PRIMARY KEY (source, target)
)`,
    ];
  }
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
  source VARCHAR(64) NOT NULL,
  target VARCHAR(64) NOT NULL COMMENT 'kind:sha256(url) prefix',
  status VARCHAR(16) NOT NULL,
  fingerprint VARCHAR(512) NOT NULL COMMENT 'breached metric:level, sorted',
  notified_at BIGINT NOT NULL COMMENT 'epoch seconds, database clock',
  PRIMARY KEY (source, target)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ];
}

export function taskTableDdl(dialect: Dialect, profile: DdlProfile, table?: string): string[] {
  return profile === 'async-task' ? asyncTaskDdl(dialect, table) : jobRetriesDdl(dialect, table);
}

export const QUEUE_SNAPSHOT_TABLE = 'taskrecon_queue_snapshot';

/**
 * Queue depths as `queues` saw them on each run, per broker and queue, for `stale-queue` (a length
 * unchanged for `staleAfter`) and `backlog-growing` (ready rising across runs). Times are epoch
 * seconds of the run (taskrecon's clock). Rows older than the longest look-back are pruned by `queues`.
 */
export function queueSnapshotDdl(dialect: Dialect): string[] {
  const t = dialect.quoteId(QUEUE_SNAPSHOT_TABLE);
  if (dialect.name === 'sqlite') {
    return [
      `CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  broker VARCHAR(64) NOT NULL,
  queue VARCHAR(191) NOT NULL,
  depth BIGINT NOT NULL,
  ready BIGINT NOT NULL,
  at_epoch BIGINT NOT NULL
)`,
      `CREATE INDEX IF NOT EXISTS idx_taskrecon_queue_snapshot_at ON ${t} (broker, queue, at_epoch)`,
    ];
  }
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  broker VARCHAR(64) NOT NULL,
  queue VARCHAR(191) NOT NULL,
  depth BIGINT NOT NULL COMMENT 'ready + delayed + reserved (Redis); ready + unacked (RabbitMQ)',
  ready BIGINT NOT NULL,
  at_epoch BIGINT NOT NULL COMMENT 'epoch seconds of the run',
  PRIMARY KEY (id),
  KEY idx_queue_at (broker, queue, at_epoch)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ];
}
