import type { Db, Row } from '../../types.js';
import type { LongTransaction, TableBloat } from '../types.js';
import { quotePostgresId } from './ddl.js';

/**
 * What keeps dead row versions in a PostgreSQL table: its vacuums, as the cumulative statistics
 * count them, and the transactions that hold vacuum back. Every function reads only.
 */

/** Epoch seconds of a nullable timestamptz column. */
const epochOrNull = (col: string): string => `FLOOR(EXTRACT(EPOCH FROM ${col}))::bigint`;

const numberOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);

/**
 * Dead and live row versions of a table from the cumulative statistics (`pg_stat_user_tables`),
 * its last vacuums, and whether its storage parameters switch autovacuum off.
 * In: the table, possibly schema-qualified. Out: the counts, or null for a table the statistics
 * do not know. Reads only the statistics and the catalogs.
 */
export async function postgresTableBloat(db: Db, table: string): Promise<TableBloat | null> {
  const [row] = await db.query<Row>(
    `SELECT s.n_dead_tup AS dead, s.n_live_tup AS live,
            ${epochOrNull('GREATEST(s.last_vacuum, s.last_autovacuum)')} AS "lastVacuum",
            ${epochOrNull('s.last_autovacuum')} AS "lastAutovacuum",
            EXISTS (SELECT 1 FROM unnest(c.reloptions) AS o
                     WHERE lower(o) IN ('autovacuum_enabled=false', 'autovacuum_enabled=off',
                                        'autovacuum_enabled=0', 'autovacuum_enabled=no', 'autovacuum_enabled=f')) AS "autovacuumOff"
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.relid = to_regclass(?)`,
    [quotePostgresId(table)],
  );
  if (!row) return null;
  const quoted = quotePostgresId(table);
  const autovacuumDisabled = row.autovacuumOff === true;
  return {
    deadRows: Number(row.dead),
    liveRows: Number(row.live),
    lastVacuumEpoch: numberOrNull(row.lastVacuum),
    lastAutovacuumEpoch: numberOrNull(row.lastAutovacuum),
    autovacuumDisabled,
    // A scale factor of 1% (default 20%) with a floor of 1,000 rows: autovacuum visits a hot task
    // table after a few minutes of attempts rather than after a fifth of it has been rewritten.
    tuneStatement: `ALTER TABLE ${quoted} SET (${autovacuumDisabled ? 'autovacuum_enabled = true, ' : ''}autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);`,
    vacuumStatement: `VACUUM (ANALYZE) ${quoted};`,
  };
}

/**
 * Transactions of other sessions connected to this database, open at least `seconds`, that hold
 * back vacuum's horizon: they have a snapshot (`backend_xmin`) or a transaction id of their own
 * (`backend_xid`, which an idle-in-transaction session that wrote keeps). Sessions of other
 * databases do not hold back this database's tables. A role without pg_read_all_stats sees the
 * transactions of its own sessions only.
 * In: the age threshold in seconds. Out: the transactions, oldest first. Reads only pg_stat_activity.
 */
export async function postgresLongTransactions(db: Db, seconds: number): Promise<LongTransaction[]> {
  const rows = await db.query<Row>(
    `SELECT pid, FLOOR(EXTRACT(EPOCH FROM statement_timestamp() - xact_start))::bigint AS age,
            state, usename AS "user", application_name AS app, left(query, 120) AS query
       FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND xact_start <= statement_timestamp() - make_interval(secs => ?)
        AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
      ORDER BY xact_start`,
    [Math.max(0, seconds)],
  );
  const text = (value: unknown): string | null =>
    value === null || value === undefined || value === '' ? null : String(value);
  return rows.map((r) => ({
    pid: Number(r.pid),
    ageSeconds: Number(r.age),
    state: text(r.state),
    user: text(r.user),
    application: text(r.app),
    query: text(r.query)?.replace(/\s+/g, ' ') ?? null,
  }));
}
