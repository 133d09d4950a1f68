import type { BoundSource } from '../../db/bind-source.js';
import { columnOf } from '../../db/profiles/types.js';
import { store } from '../../db/port/index.js';
import { DEFAULT_LEASE_SECONDS } from '../../ops/redrive/redrive.js';
import { check, type DoctorCheck } from './check.js';

/**
 * The classic task-table design's pitfalls, checked on the live table: retry times written
 * without seconds, an event id without a UNIQUE key, a failed-job payload column too short for
 * big payloads, and a server that drops idle connections sooner than a redrive may sit idle.
 */

/** Rows sampled (the newest) for the retry-time check. */
const RETRY_SAMPLE = 10_000;
/** Too few rows to say anything about how times are written. */
const RETRY_MIN_ROWS = 20;
/** Seconds are uniform, so 1 in 60 rows sits on :00; nearly all of them means `Y-m-d H:i` was written. */
const ON_THE_MINUTE_SHARE = 0.95;
/** LONGTEXT holds 4 GiB; TEXT (64 KiB) and MEDIUMTEXT (16 MiB) cut a big serialized job. */
const LONG_TYPES = new Set(['longtext', 'longblob', 'json']);

export async function pitfallChecks(
  source: BoundSource,
  options: { leaseSeconds?: number } = {},
): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  const table = source.profile.table;

  const times = await store.doctor.retryTimesOnTheMinute(source.db, source.sql, RETRY_SAMPLE);
  if (times.rows >= RETRY_MIN_ROWS) {
    const share = times.onTheMinute / times.rows;
    out.push(
      share >= ON_THE_MINUTE_SHARE
        ? check(
            'retry time seconds',
            'warn',
            `${times.onTheMinute} of the newest ${times.rows} rows have a next retry time on a whole minute (:00): the writer seems to format it without seconds ('Y-m-d H:i')`,
            "Write next_retry_time with seconds ('Y-m-d H:i:s'): without them every retry of a minute lands at once, and a backoff of 1s–59s waits up to a minute more.",
          )
        : check(
            'retry time seconds',
            'ok',
            `next retry times carry seconds (${times.onTheMinute} of ${times.rows} on :00)`,
          ),
    );
  }

  const eventColumn = columnOf(source.profile, 'eventId');
  // A job system's ids are its own keys (pg-boss: the uuid it generates, unique per queue partition).
  if (eventColumn && source.profile.kind !== 'failed-jobs' && source.profile.kind !== 'job-system') {
    const indexes = await source.db.indexes(table);
    const unique = indexes.some(
      (i) => i.unique && i.columns.length === 1 && i.columns[0]?.toLowerCase() === eventColumn.toLowerCase(),
    );
    out.push(
      unique
        ? check('event id unique', 'ok', `${table}.${eventColumn} has a UNIQUE key`)
        : check(
            'event id unique',
            'warn',
            `${table}.${eventColumn} has no UNIQUE key: the same event can be recorded twice and run twice`,
            `Add one once duplicates are resolved: ${store.doctor.addUniqueKeyStatement(source.db.dialect, table, eventColumn)}`,
          ),
    );
  }

  if (source.profile.kind === 'failed-jobs') {
    const payload = source.columns.find((c) => c.name.toLowerCase() === 'payload');
    if (payload && !LONG_TYPES.has(payload.dataType)) {
      out.push(
        check(
          'payload length',
          'warn',
          `${table}.payload is ${payload.columnType}, shorter than LONGTEXT: a large job's payload is cut when it fails, and a retry then cannot decode it`,
          store.doctor.modifyColumnStatement(source.db.dialect, table, payload.name, 'longtext-not-null') ??
            'Rebuild the table with a LONGTEXT payload column.',
        ),
      );
    } else if (payload) out.push(check('payload length', 'ok', `${table}.payload is ${payload.columnType}`));
  }

  const waitTimeout = await store.doctor.serverWaitTimeout(source.db);
  const lease = options.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
  if (waitTimeout !== null) {
    out.push(
      waitTimeout < lease
        ? check(
            'wait timeout',
            'warn',
            `the server closes idle connections after ${waitTimeout}s (wait_timeout), sooner than a claim's lease of ${lease}s: a redrive or a long compensate whose connection sits idle while handlers run loses it`,
            `Raise wait_timeout above the longest run (e.g. SET GLOBAL wait_timeout = ${Math.max(lease * 2, 600)}), or give redrive a --lease below ${waitTimeout}s.`,
          )
        : check('wait timeout', 'ok', `wait_timeout ${waitTimeout}s is longer than the lease (${lease}s)`),
    );
  }
  return out;
}
