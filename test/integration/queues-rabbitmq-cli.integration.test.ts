import type { Channel } from 'amqplib';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closedLoopbackPort } from '../fixtures/redrive/counting-handler.js';
import { JOB_BATCH, perJob } from '../support/audit-jobs.js';
import { BIN, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';
import {
  depth,
  drainQueue,
  scratchVhost,
  until,
  untilRunGone,
  type ScratchVhost,
} from '../support/rabbitmq.js';

// `queues` and `queues move` on RabbitMQ through the CLI: the replay audited message by message
// (one job-batch row per batch, listed per message by `audit`), a move SIGKILLed midway and rerun,
// and bad input (exit 3, nothing published or acked).

let v: ScratchVhost;
let ch: Channel;
let schema: TestSchema;
let closed: number;
const API = 'http://guest:guest@127.0.0.1:15672';

interface ErrorJson {
  error: { message: string; hint?: string };
}
interface MoveJson {
  runId: string;
  matched: number;
  moved: number;
  possibleDuplicates?: Array<{ runId: string; messageIds: string[] }>;
}

beforeAll(async () => {
  v = await scratchVhost('cli');
  ch = await v.channel();
  schema = await createTestSchema('queues_rabbitmq_cli');
  closed = await closedLoopbackPort();
  const init = await runJson(['init', '--audit-only', '--db', schema.dsn]);
  expect(init.code, init.stderr).toBe(0);
});
afterAll(async () => {
  await v?.drop();
  await schema?.drop();
});
beforeEach(async () => {
  for (const q of ['work', 'parking']) await ch.deleteQueue(q).catch(() => undefined);
  ch = await v.channel();
  await ch.assertQueue('parking', { durable: true });
  await ch.assertQueue('work', {
    durable: true,
    arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'parking' },
  });
  await schema.sql.query('DELETE FROM taskrecon_audit');
  await schema.sql.query('DROP TABLE IF EXISTS taskrecon_intent');
});

const plainBody = (i: number) => Buffer.from(JSON.stringify({ eventId: `evt-${i}` }));

async function park(n: number, body: (i: number) => Buffer = plainBody): Promise<void> {
  for (let i = 0; i < n; i++)
    ch.sendToQueue('work', body(i), {
      persistent: true,
      messageId: `evt-${i}`,
    });
  const rejecter = await (await v.connect()).createChannel();
  const { consumerTag } = await rejecter.consume('work', (m) => m && rejecter.nack(m, false, false));
  await until(async () => (await depth(ch, 'parking')) === n, 10_000, `${n} parked`);
  await rejecter.cancel(consumerTag);
  await rejecter.close();
}

async function drain(queue: string): Promise<string[]> {
  return (await drainQueue(v, ch, queue)).map((m) => String(m.properties.messageId));
}

const rabbit = (url = v.amqpUrl) => ['--rabbitmq', url, '--api', API];
const moveArgs = (extra: string[] = []) => [
  'queues',
  'move',
  ...rabbit(),
  '--from',
  'parking',
  '--to',
  'work',
  '--yes',
  '--db',
  schema.dsn,
  ...extra,
];

interface AuditRow {
  task_id: string;
  before_json: string;
  after_json: string;
  [column: string]: unknown;
}

/** The queue-move audit read with SQL, one row per message (job-batch rows expanded). */
async function auditedMessages(runId?: string): Promise<AuditRow[]> {
  const [rows] = await schema.sql.query(
    `SELECT task_id, before_json, after_json FROM taskrecon_audit WHERE action = 'queue-move'${runId ? ' AND run_id = ?' : ''} ORDER BY id`,
    runId ? [runId] : [],
  );
  return perJob(rows as AuditRow[]);
}

const auditCount = async (): Promise<number> => (await auditedMessages()).length;

const sha1 = (body: Buffer) => createHash('sha1').update(body).digest('hex');

describe('queues move --rabbitmq', () => {
  it('replays N parked messages: exactly N distinct ones reach the consumer, one audit entry each', async () => {
    // Bodies as published: JSON, JSON with characters beyond ASCII, and bytes that are no UTF-8.
    const body = (i: number): Buffer =>
      i % 3 === 0
        ? plainBody(i)
        : i % 3 === 1
          ? Buffer.from(JSON.stringify({ eventId: `evt-${i}`, name: 'Zoë 中文 🙂' }))
          : Buffer.concat([plainBody(i), Buffer.from([0xff, 0xfe, 0xc3])]);
    await park(40, body);
    const run = await runJson<MoveJson>(moveArgs(['--reset-death', '--batch', '15']));
    expect(run.code, run.stderr).toBe(0);
    assertMatchesSchema('queues-move', run.json);
    expect(run.json).toMatchObject({ matched: 40, moved: 40 });
    expect(await depth(ch, 'parking')).toBe(0);
    const got = await drain('work');
    expect(got).toHaveLength(40);
    expect(new Set(got).size).toBe(40);
    expect(await auditCount()).toBe(40);
    // One job-batch row per batch of 15 in the table...
    const [raw] = await schema.sql.query('SELECT task_id, event_id FROM taskrecon_audit ORDER BY id');
    expect(raw).toEqual([
      { task_id: JOB_BATCH, event_id: null },
      { task_id: JOB_BATCH, event_id: null },
      { task_id: JOB_BATCH, event_id: null },
    ]);
    // ...which `audit` lists as one entry per message, with the SHA-1 and size of its body's bytes.
    const listed = await runJson<{ count: number; entries: Array<Record<string, unknown>> }>([
      'audit',
      '--db',
      schema.dsn,
      '--run',
      run.json.runId,
      '--limit',
      '0',
      '--json',
    ]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json.count).toBe(40);
    const ids = Array.from({ length: 40 }, (_, i) => `evt-${i}`);
    expect(listed.json.entries.map((e) => e.taskId).sort()).toEqual([...ids].sort());
    for (const entry of listed.json.entries) {
      const i = Number(String(entry.taskId).slice('evt-'.length));
      expect(entry).toMatchObject({
        action: 'queue-move',
        source: 'rabbitmq',
        table: 'parking',
        taskId: `evt-${i}`,
        eventId: `evt-${i}`,
        from: null,
        to: null,
        runId: run.json.runId,
        before: { queue: 'parking', set: null, sha1: sha1(body(i)), bytes: body(i).length },
        after: { queue: 'work', set: null },
      });
    }
  });

  it('SIGKILLed midway: nothing lost, every copy at the target audited, possible duplicates listed by message id', async () => {
    const n = 2000;
    await park(n);
    const child = spawn(process.execPath, [BIN, ...moveArgs(['--batch', '50'])], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: 'ignore',
    });
    await until(async () => (await auditCount()) >= 300, 30_000, 'the move to be under way');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('close', r));
    await until(async () => (await depth(ch, 'parking')) + (await depth(ch, 'work')) >= n, 10_000, 'requeue');
    // What the killed run put at the target.
    const first = await drain('work');
    expect(first.length).toBeLessThan(n);
    const [runs] = await schema.sql.query('SELECT DISTINCT run_id AS id FROM taskrecon_intent');
    const killed = (runs as Array<{ id: string }>)[0]?.id as string;
    await untilRunGone(v, killed);
    // doctor lists the killed run's unsettled messages by id, before anything settles them.
    const [openRows] = await schema.sql.query("SELECT jobs FROM taskrecon_intent WHERE state = 'open'");
    const unsettled = (openRows as Array<{ jobs: string }>).flatMap((r) => JSON.parse(r.jobs) as string[]);
    expect(unsettled.length).toBeGreaterThan(0);
    const unsettledCheck = async () => {
      const doctor = await runJson<{ checks: Array<{ name: string; status: string; message: string }> }>([
        'doctor',
        '--db',
        schema.dsn,
      ]);
      return doctor.json.checks.find((c) => c.name === 'broker rabbitmq: unsettled moves');
    };
    const before = await unsettledCheck();
    expect(before?.status).toBe('warn');
    expect(before?.message).toContain(`${unsettled.length} message(s) of run(s) ${killed}`);
    expect(before?.message).toContain(unsettled[0]);
    const rerun = await runJson<MoveJson>(moveArgs());
    expect(rerun.code, rerun.stderr).toBe(0);
    assertMatchesSchema('queues-move', rerun.json);
    expect(await depth(ch, 'parking')).toBe(0);
    const second = await drain('work');
    // Nothing lost.
    expect(new Set([...first, ...second])).toEqual(new Set(Array.from({ length: n }, (_, i) => `evt-${i}`)));
    // Every copy the killed run put at the target has an audit entry under that run; the messages
    // of its open batches are marked as possibly at the target, settled by the rerun.
    const rows = await auditedMessages(killed);
    const audited = new Set(rows.map((r) => r.task_id));
    for (const id of first) expect(audited.has(id)).toBe(true);
    const marked = rows.filter(
      (r) => (JSON.parse(r.after_json) as { possibleDuplicate?: boolean }).possibleDuplicate,
    );
    expect(marked.map((r) => r.task_id).sort()).toEqual([...unsettled].sort());
    for (const r of marked)
      expect(JSON.parse(r.after_json)).toEqual({
        queue: 'work',
        set: null,
        possibleDuplicate: true,
        settledBy: rerun.json.runId,
      });
    // A message at the target twice is listed as a possible duplicate of the killed run.
    const possible = new Set(
      (rerun.json.possibleDuplicates ?? []).filter((d) => d.runId === killed).flatMap((d) => d.messageIds),
    );
    expect(possible.size).toBeGreaterThan(0);
    const secondSet = new Set(second);
    for (const id of first.filter((x) => secondSet.has(x))) expect(possible.has(id)).toBe(true);
    expect([...possible].sort()).toEqual([...unsettled].sort());
    expect(await unsettledCheck()).toBeUndefined();
    // No intent is left open.
    const [open] = await schema.sql.query("SELECT COUNT(*) AS n FROM taskrecon_intent WHERE state = 'open'");
    expect(Number((open as Array<{ n: number }>)[0]?.n)).toBe(0);
  });
});

describe('queues --rabbitmq', () => {
  it('answers the queues --json schema, with the peeked x-death; over AMQP alone it says what is unknown', async () => {
    await park(4);
    const run = await runJson<{
      brokers: Array<{ notes?: string[]; queues: Array<{ name: string; deadLettered: unknown }> }>;
    }>(['queues', ...rabbit(), '--queue', 'work', '--peek', '10']);
    expect(run.code, run.stderr).toBe(1);
    assertMatchesSchema('queues', run.json);
    const parking = run.json.brokers[0]?.queues.find((q) => q.name === 'parking');
    expect(parking?.deadLettered).toMatchObject({ count: 4, maxDeathCount: 1, byReason: { rejected: 4 } });
    expect(await depth(ch, 'parking')).toBe(4);
    const amqpOnly = await runJson<{ brokers: Array<{ notes?: string[] }> }>([
      'queues',
      '--rabbitmq',
      v.amqpUrl,
      '--queue',
      'parking',
    ]);
    assertMatchesSchema('queues', amqpOnly.json);
    expect(amqpOnly.json.brokers[0]?.notes?.[0]).toMatch(/no management API/);
  });
});

describe('bad input on RabbitMQ: a clear message, exit 3, nothing published or acked', () => {
  async function expectExit3(args: string[], pattern: RegExp): Promise<void> {
    const run = await runJson<ErrorJson>(args);
    expect(run.code, run.stderr).toBe(3);
    expect(run.json.error.message).toMatch(pattern);
    expect(JSON.stringify(run.json) + run.stderr).not.toMatch(/guest:guest@|:wrong@/);
  }

  it('an unreachable broker, an unreachable API', async () => {
    await expectExit3(
      ['queues', '--rabbitmq', `amqp://guest:guest@127.0.0.1:${closed}/%2F`, '--queue', 'work'],
      /cannot reach RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1/,
    );
    await expectExit3(
      ['queues', '--rabbitmq', v.amqpUrl, '--api', `http://guest:guest@127.0.0.1:${closed}`],
      /cannot reach the RabbitMQ management API/,
    );
  });

  it('wrong credentials on AMQP and on the API', async () => {
    const wrong = v.amqpUrl.replace('guest:guest@', 'guest:wrong@');
    await expectExit3(
      ['queues', '--rabbitmq', wrong, '--queue', 'work'],
      /refused the login of user 'guest'/,
    );
    await expectExit3(
      ['queues', '--rabbitmq', v.amqpUrl, '--api', 'http://guest:wrong@127.0.0.1:15672'],
      /management API .* refused the login \(HTTP 401\)/,
    );
  });

  it('a vhost or a queue that does not exist', async () => {
    const noVhost = 'amqp://guest:guest@127.0.0.1:5672/no-such-vhost';
    await expectExit3(
      ['queues', '--rabbitmq', noVhost, '--api', API],
      /vhost 'no-such-vhost' does not exist/,
    );
    await expectExit3(
      ['queues', '--rabbitmq', noVhost, '--queue', 'work'],
      /vhost 'no-such-vhost' does not exist/,
    );
    await expectExit3(['queues', ...rabbit(), '--queue', 'nope'], /queue 'nope' does not exist/);
  });

  it('queues move to or from a missing queue, or with wrong credentials, moves and acks nothing', async () => {
    await park(3);
    await expectExit3(
      ['queues', 'move', ...rabbit(), '--from', 'parking', '--to', 'nowhere', '--yes', '--db', schema.dsn],
      /queue 'nowhere' does not exist/,
    );
    await expectExit3(
      ['queues', 'move', ...rabbit(), '--from', 'nope', '--to', 'work', '--yes', '--db', schema.dsn],
      /queue 'nope' does not exist/,
    );
    const wrong = v.amqpUrl.replace('guest:guest@', 'guest:wrong@');
    await expectExit3(
      [
        'queues',
        'move',
        '--rabbitmq',
        wrong,
        '--from',
        'parking',
        '--to',
        'work',
        '--yes',
        '--db',
        schema.dsn,
      ],
      /refused the login/,
    );
    expect(await depth(ch, 'parking')).toBe(3);
    expect(await depth(ch, 'work')).toBe(0);
    expect(await auditCount()).toBe(0);
  });
});
