import type { BoundSource } from '../../db/bind-source.js';
import { store, type LongTransaction, type TableBloat } from '../../db/port/index.js';
import { formatSeconds } from '../../core/duration.js';
import type { Db } from '../../db/types.js';
import { check, type DoctorCheck } from './check.js';
import { grouped } from '../../core/grouped.js';

/**
 * Where the server keeps old row versions until a vacuum removes them (PostgreSQL), a task table
 * updated on every attempt leaves a dead version behind each time: these checks read how many
 * are waiting, and which transactions keep vacuum from removing them. Engines without a vacuum
 * report nothing, and these checks are left out.
 */

/**
 * Dead rows past this share of the live ones. Autovacuum's default trigger is 20% of the table
 * (autovacuum_vacuum_scale_factor 0.2): past it, autovacuum should already have visited, so it is
 * off, behind, or held back by a long transaction.
 */
export const BLOAT_DEAD_SHARE = 0.2;
/**
 * …and more dead rows than this: below it the dead versions fill a few hundred pages at most,
 * which the scan reads in a moment whatever their share of a small table.
 */
export const BLOAT_MIN_DEAD_ROWS = 10_000;
/**
 * A transaction open this long holds back vacuum on every table of the database. It is the default
 * time a claimed task may stay in processing before scan calls it stuck: no task's own work takes
 * longer, so a transaction older than that is a forgotten session, an idle-in-transaction client
 * or a report, not the task system.
 */
export const LONG_TRANSACTION_SECONDS = 600;

const share = (dead: number, live: number): string =>
  live === 0 ? 'no live rows' : `${Math.round((dead / live) * 100)}% of ${grouped(live)} live`;

/** Dead row versions of the task table against the live ones, with its last vacuums. */
export function bloatCheck(table: string, bloat: TableBloat, nowEpoch: number): DoctorCheck {
  const name = 'table bloat';
  const { deadRows, liveRows } = bloat;
  const last = (epoch: number | null): string =>
    epoch === null ? 'never' : `${formatSeconds(nowEpoch - epoch)} ago`;
  const vacuums = `last vacuum ${last(bloat.lastVacuumEpoch)}, last autovacuum ${last(bloat.lastAutovacuumEpoch)}${bloat.autovacuumDisabled ? '; autovacuum is off for this table' : ''}`;
  const counts = `${grouped(deadRows)} dead row versions (${share(deadRows, liveRows)})`;
  const bloated = deadRows > BLOAT_MIN_DEAD_ROWS && deadRows > liveRows * BLOAT_DEAD_SHARE;
  if (!bloated) return check(name, 'ok', `${table}: ${counts}; ${vacuums}`);
  return check(
    name,
    'warn',
    `${table}: ${counts}, more than ${Math.round(BLOAT_DEAD_SHARE * 100)}% and ${grouped(BLOAT_MIN_DEAD_ROWS)}; ${vacuums}. ` +
      'Every attempt rewrites a task row and leaves the old version behind: scans and claims read through them, and the table and its indexes grow',
    `Let autovacuum visit the table sooner: ${bloat.tuneStatement} Reclaim the dead rows now with ${bloat.vacuumStatement} ` +
      'If autovacuum runs and they stay, look for a long transaction holding them (the long transactions check).',
  );
}

const describe = (t: LongTransaction): string =>
  [
    `pid ${t.pid}`,
    `open ${formatSeconds(t.ageSeconds)}`,
    t.state ?? undefined,
    t.user ? `user ${t.user}` : undefined,
    t.application ? `application ${t.application}` : undefined,
    t.query ? `last statement: ${t.query}` : undefined,
  ]
    .filter((part): part is string => part !== undefined)
    .join(', ');

/** Other sessions' transactions open longer than `seconds`, which keep vacuum from removing dead rows. */
export function longTransactionCheck(found: LongTransaction[], seconds: number): DoctorCheck {
  const name = 'long transactions';
  const threshold = formatSeconds(seconds);
  if (found.length === 0)
    return check(name, 'ok', `no transaction on this database has been open longer than ${threshold}`);
  const shown = found.slice(0, 3).map(describe).join('; ');
  const more = found.length > 3 ? `; and ${found.length - 3} more` : '';
  return check(
    name,
    'warn',
    `${found.length} transaction${found.length === 1 ? '' : 's'} open longer than ${threshold} hold${found.length === 1 ? 's' : ''} back vacuum: ${shown}${more}. ` +
      'No dead row version newer than the oldest of them is removed, on any table of the database',
    'End them: commit or roll back in the application, or pg_terminate_backend(pid) a forgotten session. ' +
      "Set idle_in_transaction_session_timeout (e.g. '5min') so an idle transaction cannot hold vacuum back for long.",
  );
}

/**
 * Wall-clock time columns where the engine has an instant type to use instead: each writer's
 * session zone decides what they mean, and a daylight-saving change repeats an hour.
 */
export function wallClockCheck(
  source: BoundSource,
  columns: string[],
  zone: string | null,
): DoctorCheck | undefined {
  if (columns.length === 0) return undefined;
  const fix = store.doctor.wallClockToInstantStatement(
    source.db,
    source.profile.table,
    columns,
    zone ?? 'UTC',
  );
  if (fix === null) return undefined;
  return check(
    'time column type',
    'warn',
    `${columns.join(', ')} ${columns.length === 1 ? 'is' : 'are'} timestamp without time zone: wall-clock times that taskrecon reads in ${zone ?? "the server's zone"}. ` +
      'A writer whose session has another TimeZone stores shifted times, and the hour a daylight-saving change repeats is ambiguous',
    `Store instants (timestamptz), converting the values in the zone they were written in: ${fix}`,
  );
}

/** Bloat of the task table and the transactions holding vacuum back, where the engine has a vacuum. */
export async function vacuumChecks(
  db: Db,
  table: string | undefined,
  options: { nowEpoch: number; longTransactionSeconds: number },
): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  if (table !== undefined) {
    const bloat = await store.doctor.tableBloat(db, table);
    if (bloat) out.push(bloatCheck(table, bloat, options.nowEpoch));
  }
  const found = await store.doctor.longTransactions(db, options.longTransactionSeconds);
  if (found) out.push(longTransactionCheck(found, options.longTransactionSeconds));
  return out;
}
