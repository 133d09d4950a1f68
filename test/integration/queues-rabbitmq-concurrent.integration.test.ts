import amqp, { type Channel } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { perJob } from '../support/audit-jobs.js';
import { runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import {
  depth,
  drainQueue,
  scratchVhost,
  until,
  untilRunGone,
  type ScratchVhost,
} from '../support/rabbitmq.js';

// Two `queues move` runs on one RabbitMQ broker at once: each settles, before it moves, the open
// batches of runs that were killed, and must leave those of a run still working. A run connects
// with its run id as `connection_name` and holds an exclusive queue of that name, which RabbitMQ
// deletes when the connection closes; a batch of a run whose queue is still held is no possible
// duplicate. Both runs end with exit 0, every message once at the target, audited once.

let v: ScratchVhost;
let ch: Channel;
let schema: TestSchema;
const API = 'http://guest:guest@127.0.0.1:15672';
/** The broker's name when it is given by --rabbitmq (the intents' source). */
const BROKER = 'rabbitmq';

interface MoveJson {
  runId: string;
  matched: number;
  moved: number;
  possibleDuplicates?: Array<{ runId: string; messageIds: string[] }>;
  settledIntents?: Array<{ id: number; runId: string; state: string }>;
}

beforeAll(async () => {
  v = await scratchVhost('concurrent');
  ch = await v.channel();
  schema = await createTestSchema('queues_rabbitmq_concurrent');
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
  await ch.assertQueue('work', { durable: true });
  await schema.sql.query('DELETE FROM taskrecon_audit');
  await schema.sql.query('DELETE FROM taskrecon_intent');
});

async function publish(n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i++)
    ch.sendToQueue('parking', Buffer.from(JSON.stringify({ eventId: `evt-${i}` })), {
      persistent: true,
      messageId: `evt-${i}`,
    });
  await until(async () => (await depth(ch, 'parking')) === n, 10_000, `${n} published`);
}

const move = (extra: string[] = [], from = 'parking', to = 'work') => [
  'queues',
  'move',
  '--rabbitmq',
  v.amqpUrl,
  '--api',
  API,
  '--from',
  from,
  '--to',
  to,
  '--yes',
  '--db',
  schema.dsn,
  ...extra,
];

async function openIntents(): Promise<number> {
  const [rows] = await schema.sql.query("SELECT COUNT(*) AS n FROM taskrecon_intent WHERE state = 'open'");
  return Number((rows as Array<{ n: number }>)[0]?.n);
}

describe('RabbitMQ moves running at once', () => {
  it('two moves of one queue at once, three rounds: both exit 0, every message once, audited once a round, no possible duplicates', async () => {
    const n = 2000;
    const rounds = 3;
    await publish(n);
    for (let round = 0; round < rounds; round++) {
      const [from, to] = round % 2 === 0 ? ['parking', 'work'] : ['work', 'parking'];
      const args = (extra: string[]) => move(extra, from, to);
      // The second starts while the first is moving: it settles open batches before it moves, when
      // the first has one open most of the time (an intent per 20 messages). Settled as a killed
      // run's, that batch would be listed as possible duplicates.
      const first = runJson<MoveJson>(args(['--batch', '20', '--rate', '1500/s']));
      await until(async () => (await depth(ch, to)) > 0, 20_000, 'the first move started');
      const second = runJson<MoveJson>(args(['--batch', '20']));
      const [a, b] = await Promise.all([first, second]);
      expect({ round, codes: [a.code, b.code] }, `${a.stderr}\n${b.stderr}`).toEqual({
        round,
        codes: [0, 0],
      });
      expect([a.json.possibleDuplicates ?? [], b.json.possibleDuplicates ?? []]).toEqual([[], []]);
      expect(a.json.moved + b.json.moved).toBe(n);
      expect(await depth(ch, from)).toBe(0);
    }
    const at = (await drainQueue(v, ch, 'work')).map((m) => String(m.properties.messageId));
    expect({ messages: at.length, distinct: new Set(at).size }).toEqual({ messages: n, distinct: n });
    // Audit entries per message id (job-batch rows expanded): every id audited once a round.
    const [rows] = await schema.sql.query(
      "SELECT task_id, before_json FROM taskrecon_audit WHERE action = 'queue-move'",
    );
    const perId = new Map<string, number>();
    for (const r of perJob(rows as Array<{ task_id: string; before_json: string }>))
      perId.set(r.task_id, (perId.get(r.task_id) ?? 0) + 1);
    const counts = [...perId.values()];
    expect([perId.size, Math.min(...counts), Math.max(...counts)]).toEqual([n, rounds, rounds]);
    expect(await openIntents()).toBe(0);
  });

  it('leaves the open batch of a run still connected, and reports it once that run is gone', async () => {
    // A run that has committed a batch's intent and not yet settled it, still connected: its
    // exclusive queue is held. Before, another move settled that batch as `partial` and listed
    // its messages as possible duplicates; now it leaves it to its run, until the run is gone.
    const runId = randomUUID();
    const live = await amqp.connect(v.amqpUrl, {
      clientProperties: { connection_name: `taskrecon-run-${runId}` },
    });
    live.on('error', () => undefined);
    const liveCh = await live.createChannel();
    await liveCh.assertQueue(`taskrecon-run-${runId}`, { exclusive: true, autoDelete: true, durable: false });
    const [inserted] = await schema.sql.query(
      `INSERT INTO taskrecon_intent (run_id, kind, source, from_ref, to_ref, operator, host, action, jobs, detail, state, opened_epoch)
       VALUES (?, 'rabbitmq-move', ?, 'parking', 'work', 'test', 'test', 'queue-move', '["ghost-1"]', NULL, 'open', UNIX_TIMESTAMP())`,
      [runId, BROKER],
    );
    const intentId = (inserted as { insertId: number }).insertId;
    const state = async () => {
      const [rows] = await schema.sql.query('SELECT state FROM taskrecon_intent WHERE id = ?', [intentId]);
      return (rows as Array<{ state: string }>)[0]?.state;
    };
    await publish(10);
    try {
      const dry = await runJson<MoveJson>(move(['--dry-run']));
      expect(dry.json.possibleDuplicates ?? []).toEqual([]);
      const alive = await runJson<MoveJson>(move());
      expect(alive.code, alive.stderr).toBe(0);
      expect(alive.json.moved).toBe(10);
      expect(alive.json.possibleDuplicates ?? []).toEqual([]);
      expect(await state()).toBe('open');
    } finally {
      await live.close();
    }
    await untilRunGone(v, runId);
    await publish(5, 100);
    const gone = await runJson<MoveJson>(move());
    expect(gone.code, gone.stderr).toBe(0);
    expect(gone.json.possibleDuplicates ?? []).toEqual([
      expect.objectContaining({ runId, messageIds: ['ghost-1'] }),
    ]);
    expect(await state()).toBe('partial');
    expect(await openIntents()).toBe(0);
    await drainQueue(v, ch, 'work');
  });
});
