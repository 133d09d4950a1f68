import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connect.js';
import { auditDdl } from '../../src/db/ddl.js';
import type { AuditInsert } from '../../src/db/port/index.js';
import type { Db } from '../../src/db/types.js';
import {
  listOpenIntents,
  openIntent,
  requireIntentTable,
  settleIntentWithAudit,
  settleOpenIntents,
  type IntentMeta,
} from '../../src/ops/intents/index.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

const meta = (runId: string): IntentMeta => ({
  runId,
  operator: 'ops@host',
  host: 'host',
  reason: 'drain the parking queue',
  action: 'queue-move',
});

const auditOf = (runId: string, jobId: string): AuditInsert => ({
  operator: 'ops@host',
  host: 'host',
  action: 'queue-move',
  source: 'redis-main',
  taskTable: 'queues:parked',
  taskId: jobId,
  eventId: jobId,
  fromStatus: 'ready',
  toStatus: 'ready',
  beforeJson: null,
  afterJson: null,
  reason: null,
  runId,
});

describe.each(TEST_ENGINES)('the write-ahead intent store (%s)', (engine) => {
  let schema: EngineDb;
  let db: Db;
  let other: Db;

  beforeAll(async () => {
    schema = await createEngineDb(engine, 'intent_store');
    db = await connect(schema.dsn);
    other = await connect(schema.dsn);
    for (const s of auditDdl(db.dialect)) await db.execute(s);
  });

  afterAll(async () => {
    await other?.close();
    await db?.close();
    await schema?.drop();
  });

  const auditRows = () =>
    schema.rows<{ task_id: string; run_id: string }>(
      'SELECT task_id, run_id FROM taskrecon_audit ORDER BY id',
    );

  it('creates its table on demand, and opens an intent committed before anything else happens', async () => {
    expect(await listOpenIntents(db)).toEqual([]);
    await requireIntentTable(db);
    await requireIntentTable(db); // a second time changes nothing
    const opened = await openIntent(db, {
      kind: 'redis-move',
      source: 'redis-main',
      from: 'queues:parked',
      to: 'queues:default',
      jobs: ['uuid-1', 'uuid-2'],
      detail: { marker: 'taskrecon:intent:run-a:1' },
      meta: meta('run-a'),
    });
    expect(opened.id).toBeGreaterThan(0);
    // Committed: another connection sees it open, with everything needed to settle it.
    const [seen] = await listOpenIntents(other, { kinds: ['redis-move'] });
    expect(seen).toMatchObject({
      id: opened.id,
      runId: 'run-a',
      kind: 'redis-move',
      source: 'redis-main',
      from: 'queues:parked',
      to: 'queues:default',
      operator: 'ops@host',
      action: 'queue-move',
      reason: 'drain the parking queue',
      jobs: ['uuid-1', 'uuid-2'],
      detail: { marker: 'taskrecon:intent:run-a:1' },
      state: 'open',
      settledRun: null,
      settledEpoch: null,
    });
    expect(seen?.openedEpoch).toBeGreaterThan(1_700_000_000);
    expect(await listOpenIntents(other, { kinds: ['failed-job-retry'] })).toEqual([]);
  });

  it('settles once, with its audit rows in the same transaction; a second settle writes nothing', async () => {
    const [intent] = await listOpenIntents(db, { runId: 'run-a' });
    const id = intent?.id as number;
    const audit = ['uuid-1', 'uuid-2'].map((j) => auditOf('run-a', j));
    expect(await db.transaction((tx) => settleIntentWithAudit(tx, db, id, 'landed', 'run-a', audit))).toBe(
      true,
    );
    expect(await db.transaction((tx) => settleIntentWithAudit(tx, db, id, 'landed', 'run-b', audit))).toBe(
      false,
    );
    expect(await auditRows()).toEqual([
      { task_id: 'uuid-1', run_id: 'run-a' },
      { task_id: 'uuid-2', run_id: 'run-a' },
    ]);
    expect(await listOpenIntents(db)).toEqual([]);
    const [row] = await schema.rows<{ state: string; settled_run: string }>(
      'SELECT state, settled_run FROM taskrecon_intent WHERE id = ?',
      [id],
    );
    expect(row).toEqual({ state: 'landed', settled_run: 'run-a' });
  });

  it('a settlement rolled back with its batch leaves the intent open and no audit row', async () => {
    const opened = await openIntent(db, {
      kind: 'redis-move',
      source: 'redis-main',
      from: 'queues:parked',
      to: 'queues:default',
      jobs: ['uuid-9'],
      detail: null,
      meta: meta('run-r'),
    });
    await expect(
      db.transaction(async (tx) => {
        await settleIntentWithAudit(tx, db, opened.id, 'landed', 'run-r', [auditOf('run-r', 'uuid-9')]);
        throw new Error('the batch failed after the settle');
      }),
    ).rejects.toThrow('the batch failed');
    expect((await listOpenIntents(db, { runId: 'run-r' })).map((i) => i.id)).toEqual([opened.id]);
    expect((await auditRows()).filter((r) => r.run_id === 'run-r')).toEqual([]);
    await db.transaction((tx) => settleIntentWithAudit(tx, db, opened.id, 'not-landed', 'test', []));
  });

  it("settles open intents by each kind's look: what landed is audited under the killed run, the rest closed", async () => {
    const open = (kind: string, runId: string, jobs: string[]) =>
      openIntent(db, {
        kind,
        source: 'redis-main',
        from: 'queues:parked',
        to: 'queues:default',
        jobs,
        detail: { landed: runId === 'run-killed' },
        meta: meta(runId),
      });
    const landed = await open('redis-move', 'run-killed', ['j-1', 'j-2', 'j-3']);
    const notLanded = await open('redis-move', 'run-early', ['j-4']);
    const otherKind = await open('rabbitmq-move', 'run-rabbit', ['m-1']);
    const applied: number[] = [];
    const after: number[] = [];
    const summary = await settleOpenIntents(
      db,
      {
        'redis-move': async (intent) => {
          const detail = intent.detail as { landed: boolean };
          if (!detail.landed) return { state: 'not-landed', audit: [] };
          return {
            state: 'landed',
            audit: intent.jobs.map((j) => auditOf(intent.runId, j)),
            apply: async () => {
              applied.push(intent.id);
            },
            after: async () => {
              after.push(intent.id);
            },
          };
        },
      },
      'run-next',
    );
    expect(summary.open).toBe(2);
    expect(summary.settled).toEqual([
      { id: landed.id, kind: 'redis-move', runId: 'run-killed', state: 'landed', jobs: 3, audited: 3 },
      { id: notLanded.id, kind: 'redis-move', runId: 'run-early', state: 'not-landed', jobs: 1, audited: 0 },
    ]);
    expect(applied).toEqual([landed.id]);
    expect(after).toEqual([landed.id]);
    expect((await auditRows()).filter((r) => r.run_id === 'run-killed')).toEqual([
      { task_id: 'j-1', run_id: 'run-killed' },
      { task_id: 'j-2', run_id: 'run-killed' },
      { task_id: 'j-3', run_id: 'run-killed' },
    ]);
    expect((await auditRows()).filter((r) => r.run_id === 'run-early')).toEqual([]);
    const states = await schema.rows<{ id: number; state: string; settled_run: string | null }>(
      'SELECT id, state, settled_run FROM taskrecon_intent WHERE id IN (?, ?, ?) ORDER BY id',
      [landed.id, notLanded.id, otherKind.id],
    );
    expect(states.map((s) => [Number(s.id), s.state, s.settled_run])).toEqual([
      [landed.id, 'landed', 'run-next'],
      [notLanded.id, 'not-landed', 'run-next'],
      [otherKind.id, 'open', null],
    ]);
    // A kind nobody looks at stays open for its own settler.
    expect((await listOpenIntents(db)).map((i) => i.kind)).toEqual(['rabbitmq-move']);
  });

  it('two settlers of one intent audit it once', async () => {
    const opened = await openIntent(db, {
      kind: 'failed-job-retry',
      source: 'failed',
      from: 'failed_jobs',
      to: 'queues:default',
      jobs: ['f-1', 'f-2'],
      detail: null,
      meta: { ...meta('run-twice'), action: 'retry' },
    });
    const look = async () => ({
      state: 'landed' as const,
      audit: ['f-1', 'f-2'].map((j) => auditOf('run-twice', j)),
    });
    const settle = (on: Db, name: string) => settleOpenIntents(on, { 'failed-job-retry': look }, name);
    // SQLite has one writer at a time, and one process's connections cannot wait for each other:
    // there the second settler comes after the first.
    const [a, b] =
      engine === 'sqlite'
        ? [await settle(db, 'settler-a'), await settle(other, 'settler-b')]
        : await Promise.all([settle(db, 'settler-a'), settle(other, 'settler-b')]);
    expect(a.settled.length + b.settled.length).toBe(1);
    expect((await auditRows()).filter((r) => r.run_id === 'run-twice').map((r) => r.task_id)).toEqual([
      'f-1',
      'f-2',
    ]);
    expect((await listOpenIntents(db, { kinds: ['failed-job-retry'] })).map((i) => i.id)).not.toContain(
      opened.id,
    );
  });

  it('a look that fails leaves its intent open for the next run', async () => {
    const opened = await openIntent(db, {
      kind: 'redis-recover',
      source: 'redis-main',
      from: 'queues:default:delayed',
      to: 'queues:default',
      jobs: [],
      detail: null,
      meta: meta('run-unreachable'),
    });
    await expect(
      settleOpenIntents(
        db,
        {
          'redis-recover': async () => {
            throw new Error('Redis is down');
          },
        },
        'run-next',
      ),
    ).rejects.toThrow('Redis is down');
    expect((await listOpenIntents(db, { kinds: ['redis-recover'] })).map((i) => i.id)).toEqual([opened.id]);
  });
});
