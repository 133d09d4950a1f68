import type { JobSystem } from '../profiles/types.js';
import type { Db } from '../types.js';

/** A job system's table as its own bookkeeping describes it. */
export interface JobSystemInfo {
  name: JobSystem;
  /** The schema the job table lives in. */
  schema: string;
  /**
   * The schema version the system records (pg-boss: `<schema>.version.version`; River: the highest
   * `main` version in `<schema>.river_migration`; Oban: the job table's comment); null when unreadable.
   */
  schemaVersion: number | null;
  /** Whether the job table is partitioned (pg-boss: one partition per queue, or a shared one). */
  partitioned: boolean;
}

/**
 * The schema a job table lives in, whether it is partitioned, and the version row pg-boss keeps
 * beside it (`<schema>.version`, one row: the schema version its migrations reached).
 * In: the job table's name as configured (qualified or found on the search path). Out: the facts,
 * with schemaVersion null when the version table is missing or empty. Reads the catalog and one row.
 */
export async function readJobSystemVersion(db: Db, system: JobSystem, table: string): Promise<JobSystemInfo> {
  const [where] = await db.query<{ schema: unknown; kind: unknown; versions: unknown }>(
    `SELECT n.nspname AS schema, c.relkind AS kind,
            to_regclass(quote_ident(n.nspname) || '.version') IS NOT NULL AS versions
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.oid = to_regclass(?)`,
    [table],
  );
  const schema = where ? String(where.schema) : (table.split('.')[0] ?? table);
  const info: JobSystemInfo = {
    name: system,
    schema,
    schemaVersion: null,
    partitioned: where?.kind === 'p',
  };
  if (system === 'river') {
    info.schemaVersion = await riverVersion(db, schema);
    return info;
  }
  if (system === 'oban') {
    const [row] = await db.query<{ version: unknown }>(
      `SELECT obj_description(to_regclass(?), 'pg_class') AS version`,
      [table],
    );
    const text = row?.version === null || row?.version === undefined ? '' : String(row.version).trim();
    info.schemaVersion = /^\d+$/.test(text) ? Number(text) : null;
    return info;
  }
  if (where?.versions !== true) return info;
  const [row] = await db.query<{ version: unknown }>(
    `SELECT MAX(version) AS version FROM ${db.dialect.quoteId(schema)}.version`,
  );
  const version = Number(row?.version);
  if (row?.version !== null && Number.isInteger(version)) info.schemaVersion = version;
  return info;
}

/** River's migration version: the highest of the `main` line (a table without `line` predates lines). */
async function riverVersion(db: Db, schema: string): Promise<number | null> {
  const table = `${db.dialect.quoteId(schema)}.river_migration`;
  const [exists] = await db.query<{ line: unknown; present: unknown }>(
    `SELECT to_regclass(?) IS NOT NULL AS present,
            EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(?) AND attname = 'line' AND NOT attisdropped) AS line`,
    [table, table],
  );
  if (exists?.present !== true) return null;
  const [row] = await db.query<{ version: unknown }>(
    `SELECT MAX(version) AS version FROM ${table}${exists.line === true ? " WHERE line = 'main'" : ''}`,
  );
  const version = Number(row?.version);
  return row?.version !== null && Number.isInteger(version) ? version : null;
}
