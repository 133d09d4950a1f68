import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connect.js';
import { auditDdl } from '../../src/db/ddl.js';
import { insertAudit, type AuditInsert } from '../../src/db/sql/audit.js';
import type { Db } from '../../src/db/types.js';
import { auditHistory } from '../../src/verbs/audit/audit.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

const entry = (over: Partial<AuditInsert>): AuditInsert => ({
  operator: 'ops@host',
  host: 'host',
  action: 'mark-compensated',
  source: 'tasks',
  taskTable: 'async_task',
  taskId: '1',
  eventId: 'e1',
  fromStatus: 'failed',
  toStatus: 'compensated',
  beforeJson: JSON.stringify({ id: 1, status: 3 }),
  afterJson: JSON.stringify({ id: 1, status: 4 }),
  reason: 'refunded by hand',
  runId: 'run-1',
  ...over,
});

describe.each(TEST_ENGINES)('the audit log (%s)', (engine) => {
  let schema: EngineDb;
  let db: Db;

  beforeAll(async () => {
    schema = await createEngineDb(engine, 'audit_log', { timeZone: '+08:00' });
    db = await connect(schema.dsn, { appTimeZone: '+08:00' });
  });

  afterAll(async () => {
    await db?.close();
    await schema?.drop();
  });

  it('gives an empty history while the audit table does not exist yet', async () => {
    expect(await auditHistory(db, 'async_task', 1)).toEqual([]);
  });

  it("returns one task's history oldest first, with the database's time in UTC and JSON parsed", async () => {
    for (const s of auditDdl(db.dialect)) await db.execute(s);
    await db.transaction(async (tx) => {
      await insertAudit(tx, db.dialect, entry({}));
      await insertAudit(tx, db.dialect, entry({ taskId: '2', eventId: 'e2' }));
      await insertAudit(tx, db.dialect, entry({ taskTable: 'other_table' }));
      await insertAudit(
        tx,
        db.dialect,
        entry({ action: 'manual-retry', fromStatus: 'compensated', toStatus: 'pending', reason: null }),
      );
    });
    const history = await auditHistory(db, 'async_task', 1);
    expect(history.map((h) => [h.action, h.from, h.to])).toEqual([
      ['mark-compensated', 'failed', 'compensated'],
      ['manual-retry', 'compensated', 'pending'],
    ]);
    expect(history[0]).toMatchObject({
      operator: 'ops@host',
      before: { id: 1, status: 3 },
      after: { id: 1, status: 4 },
      reason: 'refunded by hand',
    });
    const [utc] = await schema.rows<{ now: number }>(`SELECT ${schema.epoch('now')} AS now`);
    const at = Date.parse(history[0]?.at ?? '') / 1000;
    expect(Math.abs(at - Number(utc?.now))).toBeLessThan(5);
  });

  it('rolls the audit row back with the change it records', async () => {
    await expect(
      db.transaction(async (tx) => {
        await insertAudit(tx, db.dialect, entry({ taskId: '9' }));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await auditHistory(db, 'async_task', 9)).toEqual([]);
  });
});
