import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connect.js';
import { auditDdl } from '../../src/db/ddl.js';
import { JOB_BATCH_TASK_ID, store, type AuditInsert } from '../../src/db/port/index.js';
import { expandAuditRecord } from '../../src/db/sql/audit-batch.js';
import type { AuditRecord } from '../../src/db/sql/audit.js';
import type { Db } from '../../src/db/types.js';

const base = {
  operator: 'ops@host',
  host: 'host',
  action: 'queue-move',
  source: 'app',
  taskTable: 'queues:old',
  fromStatus: 'ready',
  toStatus: 'ready',
  reason: 'drain',
  runId: 'run-1',
};

/** A message id longer than the audit columns (64): records show it cut. */
const LONG = `msg-${'x'.repeat(80)}-tail`;

const batchRow = (jobs: Array<[string, string | null, number | null]>): AuditInsert => ({
  ...base,
  taskId: JOB_BATCH_TASK_ID,
  eventId: null,
  beforeJson: JSON.stringify({ queue: 'queues:old', set: 'ready', jobs }),
  afterJson: JSON.stringify({ queue: 'queues:new', set: 'ready' }),
});

describe('job-batch audit rows', () => {
  it('expands into one record per job, each with its own before image; other rows stay as they are', () => {
    const record: AuditRecord = {
      ...batchRow([
        ['a', 'f'.repeat(40), 10],
        ['b%_!', null, null],
      ]),
      id: 7,
      atEpoch: 1,
    };
    const expanded = expandAuditRecord(record);
    expect(expanded.map((r) => [r.id, r.taskId, r.eventId, JSON.parse(String(r.beforeJson))])).toEqual([
      [7, 'a', 'a', { queue: 'queues:old', set: 'ready', sha1: 'f'.repeat(40), bytes: 10 }],
      [7, 'b%_!', 'b%_!', { queue: 'queues:old', set: 'ready', sha1: null, bytes: null }],
    ]);
    expect(expandAuditRecord(record, ['b%_!']).map((r) => r.taskId)).toEqual(['b%_!']);
    const plain: AuditRecord = { ...record, taskId: '42', eventId: null };
    expect(expandAuditRecord(plain)).toEqual([plain]);
    // A row that only looks like one (no job list) is not expanded.
    const odd: AuditRecord = { ...record, beforeJson: '{"queue":"q"}' };
    expect(expandAuditRecord(odd)).toEqual([odd]);
  });

  describe('read back through the store (SQLite)', () => {
    let dir: string;
    let db: Db;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'taskrecon-audit-batch-'));
      db = await connect(`sqlite:${join(dir, 'audit.db')}`, { create: true });
      for (const statement of auditDdl(db.dialect)) await db.execute(statement);
      await store.audit.insert(db, db.dialect, {
        ...base,
        taskId: 'b%_!',
        eventId: null,
        beforeJson: null,
        afterJson: null,
      });
      await store.audit.insertBatch(db, db.dialect, [
        batchRow([
          ['a', null, 1],
          ['b%_!', null, 2],
          ['c', null, 3],
        ]),
      ]);
      await store.audit.insertBatch(db, db.dialect, [batchRow([[LONG, null, 4]])]);
      await store.audit.insert(db, db.dialect, {
        ...base,
        taskId: 'bx_y',
        eventId: null,
        beforeJson: null,
        afterJson: null,
      });
    });
    afterAll(async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('pages and the newest N count jobs, not rows', async () => {
      const page = await store.audit.selectPage(db, db.dialect, {}, 0, 10);
      expect(page.map((r) => r.taskId)).toEqual(['b%_!', 'a', 'b%_!', 'c', LONG.slice(0, 64), 'bx_y']);
      const latest = await store.audit.selectLatest(db, db.dialect, {}, 3);
      expect(latest.map((r) => r.taskId)).toEqual(['c', LONG.slice(0, 64), 'bx_y']);
    });

    it('a task id filter finds the job inside a batch row, LIKE characters taken literally', async () => {
      const found = await store.audit.selectPage(db, db.dialect, { taskIds: ['b%_!'] }, 0, 10);
      expect(found.map((r) => [r.id, r.taskId])).toEqual([
        [1, 'b%_!'],
        [2, 'b%_!'],
      ]);
      expect(
        (await store.audit.selectPage(db, db.dialect, { taskIds: ['c'] }, 0, 10)).map((r) => r.taskId),
      ).toEqual(['c']);
      // Negative: an id no job has, and one that only a wildcard would match.
      expect(await store.audit.selectPage(db, db.dialect, { taskIds: ['d'] }, 0, 10)).toEqual([]);
      expect(await store.audit.selectPage(db, db.dialect, { taskIds: ['b__!'] }, 0, 10)).toEqual([]);
      const ids = await store.audit.selectIdsBefore(db, db.dialect, { taskId: 'a' }, undefined, 10);
      expect(ids).toEqual([2]);
    });

    it('an id longer than the columns is found whole and as the records show it (cut to 64)', async () => {
      const shown = LONG.slice(0, 64);
      for (const asked of [LONG, shown]) {
        const found = await store.audit.selectPage(db, db.dialect, { taskIds: [asked] }, 0, 10);
        expect(found.map((r) => r.taskId)).toEqual([shown]);
      }
      // Negative: another id of the same width is no prefix of any job.
      const other = `${shown.slice(0, 63)}z`;
      expect(await store.audit.selectPage(db, db.dialect, { taskIds: [other] }, 0, 10)).toEqual([]);
    });
  });
});
