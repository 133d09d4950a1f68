import type { DialectDdl } from '../../dialect.js';

/** The engine's identifier quoting (the dialect's quoteId). */
export const quoteMysqlId = (identifier: string): string => '`' + identifier.replace(/`/g, '``') + '`';

/** MySQL/MariaDB's DDL: InnoDB, utf8mb4, keys inline, column comments. */
export const mysqlDdl: DialectDdl = {
  asyncTask: (t) => [
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
  ],
  jobRetries: (t) => [
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
  ],
  audit: (t) => [
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
  ],
  notify: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  source VARCHAR(64) NOT NULL,
  target VARCHAR(64) NOT NULL COMMENT 'kind:sha256(url) prefix',
  status VARCHAR(16) NOT NULL,
  fingerprint VARCHAR(512) NOT NULL COMMENT 'breached metric:level, sorted',
  notified_at BIGINT NOT NULL COMMENT 'epoch seconds, database clock',
  PRIMARY KEY (source, target)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  alertClaim: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  task_table VARCHAR(191) NOT NULL,
  event_id VARCHAR(191) NOT NULL COMMENT 'the job identity the alert is about',
  run_id VARCHAR(40) NOT NULL COMMENT 'the sweep that claimed it',
  claimed_at BIGINT NOT NULL COMMENT 'epoch seconds, database clock',
  sent TINYINT NOT NULL DEFAULT 0 COMMENT '1 once a target took the message',
  PRIMARY KEY (task_table, event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  queueSnapshot: (t) => [
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
  ],
  intent: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  run_id VARCHAR(40) NOT NULL COMMENT 'the run that opened it',
  kind VARCHAR(32) NOT NULL COMMENT 'redis-move, redis-recover, failed-job-retry, ...',
  source VARCHAR(64) NOT NULL COMMENT 'the broker or task source it writes to',
  from_ref VARCHAR(255) NOT NULL,
  to_ref VARCHAR(255) NOT NULL,
  operator VARCHAR(128) NOT NULL,
  host VARCHAR(128) NOT NULL,
  action VARCHAR(32) NOT NULL COMMENT 'the audit action of the change',
  reason TEXT NULL,
  jobs LONGTEXT NOT NULL COMMENT 'JSON array of job ids, uuids or message ids',
  detail LONGTEXT NULL COMMENT 'JSON: what the kind needs to settle it by looking',
  state VARCHAR(16) NOT NULL DEFAULT 'open' COMMENT 'open, landed, not-landed, partial',
  opened_epoch BIGINT NOT NULL COMMENT 'epoch seconds, database clock',
  settled_epoch BIGINT NULL,
  settled_run VARCHAR(40) NULL COMMENT 'the run that settled it',
  PRIMARY KEY (id),
  KEY idx_state_kind (state, kind),
  KEY idx_run (run_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  pushMarker: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  run_id VARCHAR(40) NOT NULL COMMENT 'the run whose intent it marks',
  intent_id BIGINT NOT NULL COMMENT 'the intent, in the failed-jobs table''s database',
  state VARCHAR(16) NOT NULL COMMENT 'landed (written with the jobs) or fenced (by a later run)',
  jobs LONGTEXT NOT NULL COMMENT 'JSON array of the failed rows'' ids pushed',
  created_epoch BIGINT NOT NULL COMMENT 'epoch seconds, database clock',
  PRIMARY KEY (run_id, intent_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  ack: (t) => [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  code VARCHAR(32) NOT NULL,
  broker VARCHAR(64) NOT NULL,
  queue VARCHAR(191) NOT NULL COMMENT 'empty for the broker itself',
  reason TEXT NOT NULL,
  operator VARCHAR(128) NOT NULL,
  created_epoch BIGINT NOT NULL COMMENT 'epoch seconds, database clock',
  until_epoch BIGINT NOT NULL COMMENT 'epoch seconds, database clock',
  ended_epoch BIGINT NULL COMMENT 'ended early by ack --remove',
  run_id VARCHAR(40) NOT NULL,
  PRIMARY KEY (id),
  KEY idx_until (until_epoch)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  referenceEffect: (effect, processed) => [
    `CREATE TABLE IF NOT EXISTS ${effect} (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(64) NOT NULL,
       coupon_template_id VARCHAR(32) NOT NULL, event_id VARCHAR(64) NULL, created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
       KEY idx_order (order_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    `CREATE TABLE IF NOT EXISTS ${processed} (event_id VARCHAR(64) NOT NULL PRIMARY KEY,
       processed_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
};
