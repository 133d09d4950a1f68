import type { BoundSource } from '../../db/bind-source.js';
import { AUDIT_TABLE } from '../../db/ddl.js';
import { store, AUDIT_WRITE_COLUMNS } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { mappedColumns } from '../../db/profiles/types.js';
import { check, type DoctorCheck } from './check.js';
import { grouped } from '../../core/grouped.js';

/** A column of this many characters or fewer truncates the PHP stack traces failed-job tables keep (the failed-jobs design). */
const TEXT_MAX_CHARS = 65_535;

/** The audit columns taskrecon writes; a table that lacks one cannot take an audit row. */
export const AUDIT_COLUMNS = ['id', 'created_at', ...AUDIT_WRITE_COLUMNS] as const;

/** The table, each mapped column and its type, as inspectSource found them. */
export function columnChecks(source: BoundSource): DoctorCheck[] {
  const table = source.problems.find((p) => p.check === 'table');
  if (table) return [check('table', 'fail', table.message, table.hint)];
  const checks: DoctorCheck[] = [
    check('table', 'ok', `${source.profile.table} exists with ${source.columns.length} columns`),
  ];
  for (const problem of source.problems) {
    checks.push(
      check(
        problem.check === 'type' ? 'column type' : 'column',
        problem.severity === 'error' ? 'fail' : 'warn',
        problem.message,
        problem.hint,
      ),
    );
  }
  if (!source.problems.some((p) => p.severity === 'error')) {
    const mapped = mappedColumns(source.profile).map(({ field, column }) => {
      const ref = field === 'status' ? undefined : source.profile.fields[field];
      return `${field}→${ref && 'json' in ref ? `${column} ${ref.path}` : column}`;
    });
    checks.push(
      check(
        'columns',
        'ok',
        `profile ${source.profile.name} maps ${mapped.join(', ')}; each exists with a fitting type`,
      ),
    );
  }
  return checks;
}

/** last_error must hold what taskrecon writes into it (the profile's expected length). */
export function lastErrorCheck(source: BoundSource): DoctorCheck | undefined {
  const ref = source.profile.fields.lastError;
  if (!ref || !('column' in ref)) return undefined;
  const live = source.columns.find((c) => c.name.toLowerCase() === ref.column.toLowerCase());
  if (!live) return undefined;
  const name = 'last_error length';
  const expected = source.profile.expectedLastErrorLength;
  const holds = live.maxLength === null ? 'unbounded text' : `${grouped(live.maxLength)} characters`;
  if (expected !== undefined && live.maxLength !== null && live.maxLength < expected) {
    return check(
      name,
      'fail',
      `${live.name} is ${live.columnType} (${holds}), shorter than the ${expected} characters taskrecon assumes: longer errors are cut off, or rejected in strict mode`,
      store.doctor.modifyColumnStatement(
        source.db.dialect,
        source.profile.table,
        live.name,
        'varchar-null',
        expected,
      ) ?? `Rebuild ${source.profile.table} with ${live.name} VARCHAR(${expected}).`,
    );
  }
  if (source.profile.kind === 'failed-jobs' && live.maxLength !== null && live.maxLength <= TEXT_MAX_CHARS) {
    return check(
      name,
      'warn',
      `${live.name} is ${live.columnType} (${holds}): deep PHP stack traces are longer and get cut off`,
      store.doctor.modifyColumnStatement(
        source.db.dialect,
        source.profile.table,
        live.name,
        'longtext-not-null',
      ) ?? `Use a TEXT column for ${live.name}.`,
    );
  }
  return check(
    name,
    'ok',
    `${live.name} is ${live.columnType} (${holds})${expected !== undefined ? `, at least the ${expected} taskrecon assumes` : ''}`,
  );
}

/** Stored status values the profile does not map: scan counts them as `unknown`. */
export async function statusValuesCheck(source: BoundSource): Promise<DoctorCheck | undefined> {
  const model = source.profile.status;
  if (model.kind !== 'column') return undefined;
  if (!source.columns.some((c) => c.name.toLowerCase() === model.column.toLowerCase())) return undefined;
  const counts = await store.doctor.statusValueCounts(source.db, source.sql.table, model.column);
  const unknown = counts.filter((c) => source.sql.logicalStatus(c.raw) === 'unknown');
  const mapping = Object.entries(model.values)
    .map(([logical, raw]) => `${logical}=${(raw ?? []).join('|')}`)
    .join(', ');
  if (unknown.length > 0) {
    const list = unknown
      .map((u) => `${u.raw === null ? 'NULL' : JSON.stringify(u.raw)} (${u.count} rows)`)
      .join(', ');
    return check(
      'status values',
      'warn',
      `${model.column} holds values the profile does not map: ${list}; scan counts them as unknown`,
      `Map them under \`statuses:\` in the source (now ${mapping}).`,
    );
  }
  return check('status values', 'ok', `every ${model.column} value is mapped (${mapping})`);
}

/** taskrecon's audit table: present, with the columns audited writes need. */
export async function auditTableCheck(db: Db): Promise<DoctorCheck> {
  const columns = await db.columns(AUDIT_TABLE);
  if (!columns) {
    return check(
      'audit table',
      'warn',
      `${AUDIT_TABLE} does not exist: read-only commands work, but compensate and diff --enqueue cannot record who did what`,
      'Create it with `taskrecon init --audit-only` (or print the DDL with `taskrecon init --audit-only --print`).',
    );
  }
  const have = new Set(columns.map((c) => c.name.toLowerCase()));
  const missing = AUDIT_COLUMNS.filter((c) => !have.has(c));
  if (missing.length > 0) {
    return check(
      'audit table',
      'fail',
      `${AUDIT_TABLE} lacks columns ${missing.join(', ')}`,
      `Compare it with \`taskrecon init --audit-only --print\` and add what is missing.`,
    );
  }
  return check('audit table', 'ok', `${AUDIT_TABLE} exists with the columns audited writes need`);
}
