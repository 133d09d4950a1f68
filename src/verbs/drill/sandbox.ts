import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindSource, type BoundSource } from '../../db/bind-source.js';
import { asyncTaskDdl, auditDdl } from '../../db/ddl.js';
import { asyncTask } from '../../db/profiles/builtin.js';
import { store } from '../../db/port/index.js';
import { connect } from '../../db/connect.js';
import type { Db } from '../../db/types.js';

/**
 * The embedded target of `drill` without --handler-url: a fresh SQLite file in a temp directory
 * holding the reference task table, taskrecon's audit table and the reference handler's business
 * tables. Nothing else is touched; the directory is removed afterwards unless kept.
 */
export interface DrillSandbox {
  file: string;
  db: Db;
  source: BoundSource;
  /** Closes the database and removes the directory (or leaves it, with `keep`). */
  dispose(keep: boolean): Promise<void>;
}

export async function createDrillSandbox(): Promise<DrillSandbox> {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-drill-'));
  const file = join(dir, 'drill.sqlite');
  const db = await connect(`sqlite:${file}`, { create: true });
  for (const statement of [
    ...asyncTaskDdl(db.dialect),
    ...auditDdl(db.dialect),
    ...store.sandbox.referenceEffectDdl(db.dialect),
  ]) {
    await db.execute(statement);
  }
  const source = await bindSource(db, asyncTask, 'drill-sandbox');
  return {
    file,
    db,
    source,
    async dispose(keep) {
      await db.close();
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}
