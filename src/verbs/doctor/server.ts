import type { BoundSource } from '../../db/bind-source.js';
import { engineFor } from '../../db/engines/registry.js';
import { store, type ServerClock } from '../../db/port/index.js';
import { offsetMinutes, offsetOfZone } from '../../db/zone.js';
import type { TimeField, TimeType } from '../../core/task.js';
import { check, type DoctorCheck } from './check.js';

/** Server and client clocks further apart than this make times written by the app look shifted. */
export const CLOCK_SKEW_WARN_SECONDS = 5;

/** Whether taskrecon supports the server's version, as its engine judges it. */
export function versionCheck(clock: ServerClock): DoctorCheck {
  const verdict = engineFor(clock.engine).versionVerdict(clock.version);
  return check('server version', verdict.status, verdict.message, verdict.hint);
}

/** SKIP LOCKED by version, then proven by a statement on the task table that locks nothing. */
export async function skipLockedCheck(
  source: BoundSource | undefined,
  clock: ServerClock,
): Promise<DoctorCheck> {
  const name = 'skip locked';
  const verdict = engineFor(clock.engine).skipLockedVerdict(clock.version);
  if (verdict) return check(name, verdict.status, verdict.message, verdict.hint);
  if (!source) return check(name, 'ok', `supported by ${clock.version}`);
  const id = source.sql.expr('id');
  if (!id) return check(name, 'ok', `supported by ${clock.version}`);
  try {
    await source.db.transaction((tx) => store.doctor.probeSkipLocked(tx, source.sql.table, id));
    return check(name, 'ok', `supported: SELECT … FOR UPDATE SKIP LOCKED runs on ${source.profile.table}`);
  } catch (error) {
    return check(
      name,
      'fail',
      `SELECT … FOR UPDATE SKIP LOCKED fails on ${source.profile.table}: ${(error as Error).message}`,
      'Check the engine of the table (InnoDB) and the grants of the user.',
    );
  }
}

const fmtOffset = (seconds: number): string => {
  const sign = seconds < 0 ? '-' : '+';
  const abs = Math.abs(Math.round(seconds / 60));
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
};

export interface ZoneInput {
  clock: ServerClock;
  /** config `appTimeZone` (or TASKRECON_APP_TIME_ZONE), if any. */
  appTimeZone: string | undefined;
  /** The DATETIME columns of the source (TIMESTAMP and unix ints do not depend on a zone). */
  datetimeColumns: string[];
  /** The TIMESTAMP columns: right whatever the zone, unless writers hand them wall-clock strings in another zone. */
  timestampColumns?: string[];
  /** Warnings met while pinning the session zone. */
  connectWarnings: string[];
}

/**
 * DATETIME columns store wall-clock time without a zone: they are right only if every writer and
 * taskrecon read them in one zone. Writers that let the server fill them (DEFAULT CURRENT_TIMESTAMP,
 * NOW()) use the server's global zone; the app's own writes use appTimeZone. When the two disagree,
 * the same column holds times in two zones and due/stuck are off by the difference.
 */
export function zoneCheck(input: ZoneInput): DoctorCheck[] {
  const { clock, appTimeZone, datetimeColumns } = input;
  const checks: DoctorCheck[] = [];
  const name = 'time zones';
  if (engineFor(clock.engine).embedded) {
    const appOffset = appTimeZone ? offsetOfZone(appTimeZone) : undefined;
    if (appOffset && appOffset !== '+00:00') {
      checks.push(
        check(
          name,
          'warn',
          `SQLite stores DATETIME text as UTC; appTimeZone ${appTimeZone} is not applied to it`,
          "Write DATETIME values in UTC (datetime('now')) in SQLite, or drop appTimeZone for this source.",
        ),
      );
    } else {
      checks.push(check(name, 'ok', 'SQLite has no session zone: DATETIME text is read as UTC'));
    }
    return checks;
  }
  const globalDesc =
    clock.globalZone === 'SYSTEM' ? `SYSTEM (${clock.systemZone ?? '?'})` : String(clock.globalZone);
  const globalOffset = clock.globalOffsetSeconds === null ? undefined : fmtOffset(clock.globalOffsetSeconds);
  const sessionOffset = fmtOffset(clock.sessionOffsetSeconds);
  const session =
    clock.sessionZone === sessionOffset ? sessionOffset : `${clock.sessionZone} (${sessionOffset})`;
  const zones =
    `server zone ${globalDesc}${globalOffset && globalOffset !== clock.globalZone ? ` = ${globalOffset}` : ''}, ` +
    `system ${clock.systemZone ?? '?'}, taskrecon's session ${session}`;
  for (const warning of input.connectWarnings)
    checks.push(
      check('time zone tables', 'warn', warning, 'Load the zone tables, or give appTimeZone as an offset.'),
    );
  const timestamps = input.timestampColumns ?? [];
  const appOffsetNow = appTimeZone ? offsetOfZone(appTimeZone) : undefined;
  const appSecondsNow = appOffsetNow ? (offsetMinutes(appOffsetNow) ?? 0) * 60 : undefined;
  if (
    datetimeColumns.length === 0 &&
    timestamps.length > 0 &&
    appSecondsNow !== undefined &&
    clock.globalOffsetSeconds !== appSecondsNow
  ) {
    checks.push(
      check(
        name,
        'warn',
        `${zones}; appTimeZone ${appTimeZone} (${appOffsetNow}) is not the server's zone. TIMESTAMP columns (${timestamps.join(', ')}) ` +
          "are stored right only if writers that pass wall-clock strings (PHP's date(), Laravel's Date::now()) set their session to appTimeZone",
        `Set the 'timezone' of the app's database connection to '${appOffsetNow}', or the server's default_time_zone to it.`,
      ),
    );
    return checks;
  }
  if (datetimeColumns.length === 0) {
    checks.push(
      check(
        name,
        'ok',
        `${zones}; the time columns are TIMESTAMP or unix seconds, which do not depend on a zone`,
      ),
    );
    return checks;
  }
  const columns = datetimeColumns.join(', ');
  if (!appTimeZone) {
    checks.push(
      check(name, 'ok', `${zones}; DATETIME columns (${columns}) are read in the server's zone`, null),
    );
    return checks;
  }
  const appOffset = offsetOfZone(appTimeZone);
  if (!appOffset) {
    checks.push(
      check(
        name,
        'fail',
        `appTimeZone '${appTimeZone}' is not a time zone`,
        "Use an IANA name such as Asia/Shanghai, or an offset such as '+08:00'.",
      ),
    );
    return checks;
  }
  const app = appTimeZone === appOffset ? appOffset : `${appTimeZone} (${appOffset})`;
  const appSeconds = (offsetMinutes(appOffset) ?? 0) * 60;
  if (clock.sessionOffsetSeconds !== appSeconds) {
    checks.push(
      check(
        name,
        'fail',
        `${zones}: the session is not at appTimeZone ${app}, so DATETIME columns (${columns}) are misread`,
        "Load the server's zone tables, or give appTimeZone as an offset such as '+08:00'.",
      ),
    );
    return checks;
  }
  if (clock.globalOffsetSeconds === null || clock.globalOffsetSeconds !== appSeconds) {
    const differ =
      clock.globalOffsetSeconds === null
        ? 'cannot be converted (no zone tables), so it cannot be checked against'
        : `differs by ${formatHours(Math.abs(appSeconds - clock.globalOffsetSeconds))} from`;
    checks.push(
      check(
        name,
        'fail',
        `DATETIME columns (${columns}) with a server/app zone mismatch: ${zones}; the server's zone ${differ} appTimeZone ${app}. ` +
          'Values the server fills (DEFAULT CURRENT_TIMESTAMP, NOW() in a session left at the default zone) and values the app writes are in different zones, so due and stuck are off by the difference',
        `Make them agree: set the server's default_time_zone='${appOffset}' (my.cnf, or SET GLOBAL time_zone='${appOffset}'), ` +
          `or have every writer SET time_zone='${appOffset}'; if the app in fact writes in the server's zone, set appTimeZone to ${globalOffset ?? 'that zone'}.`,
      ),
    );
    return checks;
  }
  checks.push(
    check(
      name,
      'ok',
      `${zones}; appTimeZone ${app} agrees with the server for DATETIME columns (${columns})`,
    ),
  );
  return checks;
}

function formatHours(seconds: number): string {
  const hours = seconds / 3600;
  return `${Number.isInteger(hours) ? hours : hours.toFixed(2)}h`;
}

/** The server's clock against the client's, and NOW() against UTC_TIMESTAMP(). */
export function clockCheck(clock: ServerClock, clientEpoch: number): DoctorCheck & { skewSeconds: number } {
  const skew = clock.nowEpoch - clientEpoch;
  const skewText = `client ${clientEpoch} (skew ${skew >= 0 ? '+' : ''}${skew}s)`;
  const text = engineFor(clock.engine).clockText(clock, skewText);
  if (Math.abs(skew) > CLOCK_SKEW_WARN_SECONDS) {
    return {
      ...check(
        'clock skew',
        'warn',
        `${text}: the clocks disagree by more than ${CLOCK_SKEW_WARN_SECONDS}s`,
        'Run NTP (chrony/systemd-timesyncd) on the database host and the app hosts. taskrecon itself uses the database clock.',
      ),
      skewSeconds: skew,
    };
  }
  return { ...check('clock skew', 'ok', text), skewSeconds: skew };
}

/** The source's columns of one time type (DATETIME by default; TIMESTAMP and unix seconds on request). */
export function datetimeColumns(source: BoundSource, type: TimeType = 'datetime'): string[] {
  const out: string[] = [];
  for (const field of source.sql.timeFields() as TimeField[]) {
    if ((source.sql.timeTypes[field] ?? 'datetime') !== type) continue;
    const ref = source.profile.fields[field];
    if (ref && 'column' in ref) out.push(ref.column);
  }
  return out;
}
