import { inspectSource, type BoundSource } from '../../db/bind-source.js';
import { store, type ServerClock } from '../../db/port/index.js';
import type { Profile } from '../../db/profiles/types.js';
import type { Db } from '../../db/types.js';
import { check, type CheckStatus, type DoctorCheck } from './check.js';
import { auditTableCheck, columnChecks, lastErrorCheck, statusValuesCheck } from './schema.js';
import { openIntentsCheck } from './intents.js';
import { indexChecks } from './indexes.js';
import { pitfallChecks } from './pitfalls.js';
import { ruleIndexChecks } from './rules.js';
import { replicaCheck } from './replica.js';
import { replicaLag, type ReplicaLag } from '../../db/replica.js';
import type { RuleConfig } from '../../config/schema.js';
import { clockCheck, datetimeColumns, skipLockedCheck, versionCheck, zoneCheck } from './server.js';
import type { SourceInfo } from '../../ops/task-lists.js';
import { LONG_TRANSACTION_SECONDS, vacuumChecks, wallClockCheck } from './vacuum.js';

export type { CheckStatus, DoctorCheck, ExplainedQuery } from './check.js';

/** The JSON contract of `doctor`. */
export interface DoctorResult {
  source: SourceInfo;
  server: ServerClock & { clientEpoch: number; skewSeconds: number; appTimeZone: string | null };
  /** The worst status of any check. */
  status: CheckStatus;
  summary: Record<CheckStatus, number>;
  checks: DoctorCheck[];
  /** When `db` is the read replica (--read-db): its replication lag. */
  readReplica?: ReplicaLag;
}

export interface DoctorOptions {
  sourceName: string;
  profile: Profile;
  appTimeZone: string | undefined;
  stuckAfterMs: number;
  /** How long connecting took, for the connection check. */
  connectMs: number;
  /** Diff rules from the config, whose indexes are checked on this source. */
  rules?: readonly RuleConfig[];
  /** The source's DSN, and how to open a rule's business database when it is another one. */
  sourceDsn?: string;
  openDb?: (dsn: string) => Promise<Db>;
  /** `db` is the read replica (--read-db): check its lag. */
  readReplica?: boolean;
  /** Transactions open longer than this (seconds) are reported; default LONG_TRANSACTION_SECONDS. */
  longTransactionSeconds?: number;
  /** The client's clock (epoch ms); injected so tests can skew it. */
  clientNowMs?: () => number;
}

/** Runs every check on an open database. Reads only; the SKIP LOCKED probe locks no row. */
export async function runDoctor(db: Db, options: DoctorOptions): Promise<DoctorResult> {
  const clientNow = options.clientNowMs ?? Date.now;
  const before = clientNow();
  const clock = await store.doctor.serverClock(db);
  const clientEpoch = Math.round((before + clientNow()) / 2000);
  const checks: DoctorCheck[] = [
    check('connection', 'ok', `connected to ${db.display} in ${options.connectMs} ms`),
    versionCheck(clock),
  ];
  const lag = options.readReplica ? await replicaLag(db) : undefined;
  if (lag) checks.push(replicaCheck(db.display, lag));

  const source: BoundSource = await inspectSource(db, options.profile, options.sourceName);
  const tableExists = !source.problems.some((p) => p.check === 'table');
  checks.push(...columnChecks(source));
  const skew = clockCheck(clock, clientEpoch);
  checks.push(
    ...zoneCheck({
      clock,
      appTimeZone: options.appTimeZone,
      datetimeColumns: tableExists ? datetimeColumns(source) : [],
      timestampColumns: tableExists ? datetimeColumns(source, 'timestamp') : [],
      connectWarnings: db.warnings,
    }),
    { name: skew.name, status: skew.status, message: skew.message, hint: skew.hint },
  );
  const wallClock = tableExists
    ? wallClockCheck(source, datetimeColumns(source), options.appTimeZone ?? clock.globalZone)
    : undefined;
  if (wallClock) checks.push(wallClock);
  checks.push(await skipLockedCheck(tableExists ? source : undefined, clock));
  if (tableExists) {
    const lastError = lastErrorCheck(source);
    if (lastError) checks.push(lastError);
    if (!source.problems.some((p) => p.severity === 'error')) checks.push(...(await pitfallChecks(source)));
    if (!source.problems.some((p) => p.severity === 'error')) {
      const status = await statusValuesCheck(source);
      if (status) checks.push(status);
      checks.push(
        ...(await indexChecks(source, {
          nowEpoch: clock.nowEpoch,
          stuckAfterMs: options.stuckAfterMs,
          limit: 20,
        })),
      );
      if (options.rules?.length && options.openDb) {
        checks.push(
          ...(await ruleIndexChecks(source, options.sourceDsn ?? '', options.rules, options.openDb)),
        );
      }
    } else {
      checks.push(
        check(
          'scan index',
          'warn',
          'not checked: fix the columns first, then the scan queries can be explained',
          null,
        ),
      );
    }
  }
  checks.push(
    ...(await vacuumChecks(db, tableExists ? options.profile.table : undefined, {
      nowEpoch: clock.nowEpoch,
      longTransactionSeconds: options.longTransactionSeconds ?? LONG_TRANSACTION_SECONDS,
    })),
  );
  checks.push(await auditTableCheck(db));
  checks.push(await openIntentsCheck(db));

  const summary: Record<CheckStatus, number> = { ok: 0, warn: 0, fail: 0 };
  for (const c of checks) summary[c.status]++;
  return {
    source: {
      name: options.sourceName,
      profile: options.profile.name,
      table: options.profile.table,
      db: db.display,
    },
    server: {
      ...clock,
      clientEpoch,
      skewSeconds: skew.skewSeconds,
      appTimeZone: options.appTimeZone ?? null,
    },
    status: summary.fail > 0 ? 'fail' : summary.warn > 0 ? 'warn' : 'ok',
    summary,
    checks,
    ...(lag ? { readReplica: lag } : {}),
  };
}
