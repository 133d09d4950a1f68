import type { Channel } from 'amqplib';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { depth, scratchVhost, until, type ScratchVhost } from '../support/rabbitmq.js';
import { assertMatchesSchema } from '../support/schemas.js';

// Cron with an acknowledged finding: a broker with one known problem (a queue nobody consumes,
// over its ready threshold) and a healthy task table, on every engine.

let v: ScratchVhost;
let ch: Channel;

beforeAll(async () => {
  v = await scratchVhost('ack');
  ch = await v.channel();
  await ch.assertQueue('work', { durable: true });
  for (let i = 0; i < 2; i++) ch.sendToQueue('work', Buffer.from(`job${i}`), { persistent: true });
  await until(async () => (await depth(ch, 'work')) === 2);
});

afterAll(async () => {
  await v?.drop();
});

interface QueuesJson {
  findings: Array<{ code: string; queue: string | null; acknowledged?: { id: number; reason: string } }>;
}
interface AckJson {
  action: string;
  ack: { id: number; state: string; until: string; queue: string | null };
}

/** What cron would mail: everything the run printed. */
const mail = (run: { stdout: string; stderr: string }) => run.stdout + run.stderr;

describe.each(TEST_ENGINES)('ack: acknowledged findings keep cron quiet until they expire (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;
  let prom: string;
  const acks = async () =>
    Number((await db.rows<{ n: number }>('SELECT COUNT(*) AS n FROM taskrecon_ack'))[0]?.n);
  const audited = async (action: string) =>
    Number(
      (
        await db.rows<{ n: number }>('SELECT COUNT(*) AS n FROM taskrecon_audit WHERE action = ?', [action])
      )[0]?.n,
    );
  const queuesQuiet = () => runCli(['queues', '--quiet'], { cwd });
  const reportQuiet = (extra: string[] = []) =>
    runCli(['report', '--quiet', '--format', 'prometheus', '--output', prom, ...extra], { cwd });
  const ack = (args: string[]) => runJson<AckJson>(['ack', ...args], { cwd });

  beforeAll(async () => {
    db = await createEngineDb(engine, 'ack_cron');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-ack-'));
    prom = join(cwd, 'taskrecon.prom');
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        'sources:',
        '  tasks: { profile: async-task }',
        'brokers:',
        `  rabbit: { kind: rabbitmq, url: "${v.amqpUrl}", api: "${v.apiUrl}", queues: [work] }`,
        'report:',
        '  thresholds: { queues: { ready: { warn: 1 } } }',
      ].join('\n'),
    );
    const init = await runCli(['init'], { cwd });
    expect(init.code, init.stderr).toBe(0);
    // A healthy table: tasks created and done in the window, nothing failed, due or stuck.
    await db.run(`INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, created_at, updated_at) VALUES
      ('coupon', 'o-1', 'ev-1', '{}', 2, 0, ${db.at(3600)}, ${db.at(-120)}, ${db.at(-119)}),
      ('coupon', 'o-2', 'ev-2', '{}', 2, 0, ${db.at(3600)}, ${db.at(-60)}, ${db.at(-59)})`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('before any acknowledgement both cron lines speak', async () => {
    const queues = await queuesQuiet();
    expect(queues.code).toBe(1);
    expect(mail(queues)).toContain('no-consumers rabbit/work');
    const report = await reportQuiet(['--exit-status']);
    expect(report.code).toBe(1);
    expect(mail(report)).toContain(`WARNING: wrote prometheus to ${prom}`);
  });

  it('report --output exits 0 once the file is written, and prints nothing under --quiet; --exit-status keeps the verdict', async () => {
    const written = await reportQuiet();
    expect({ code: written.code, mail: mail(written) }).toEqual({ code: 0, mail: '' });
    expect(readFileSync(prom, 'utf8')).toMatch(/taskrecon_report_status\{[^}]*\} 1/);
    expect((await reportQuiet(['--exit-status'])).code).toBe(1);
    const lonely = await runJson(['report', '--exit-status'], { cwd });
    expect(lonely.code).toBe(3);
    assertMatchesSchema('error', lonely.json);
  });

  it('acknowledged: queues --quiet and report --quiet --output print nothing and exit 0; expired: they speak again', async () => {
    const reason = 'Prometheus alerts on it; consumer rollout on Monday';
    const finding = await ack([
      'no-consumers',
      '--broker',
      'rabbit',
      '--queue',
      'work',
      '--until',
      '30s',
      '--reason',
      reason,
    ]);
    expect(finding.code, finding.stderr).toBe(0);
    assertMatchesSchema('ack', finding.json);
    expect(finding.json).toMatchObject({ action: 'added', ack: { state: 'active', queue: 'work' } });
    const breach = await ack([
      'ready',
      '--broker',
      'rabbit',
      '--queue',
      'work',
      '--until',
      '30s',
      '--reason',
      reason,
    ]);
    expect(breach.code, breach.stderr).toBe(0);
    const expiry = await db.rows<{ until: number }>('SELECT MAX(until_epoch) AS until FROM taskrecon_ack');

    const queues = await queuesQuiet();
    expect({ code: queues.code, mail: mail(queues) }).toEqual({ code: 0, mail: '' });
    const report = await reportQuiet(['--exit-status']);
    expect({ code: report.code, mail: mail(report) }).toEqual({ code: 0, mail: '' });
    expect(readFileSync(prom, 'utf8')).toMatch(/taskrecon_report_status\{[^}]*\} 0/);
    const reported = await runJson<{
      status: string;
      queues: { status: string; breaches: Array<{ metric: string; acknowledged?: { reason: string } }> };
    }>(['report'], { cwd });
    expect(reported.code).toBe(0);
    expect(reported.json.queues.status).toBe('OK');
    expect(reported.json.queues.breaches).toEqual([
      expect.objectContaining({ metric: 'ready', acknowledged: expect.objectContaining({ reason }) }),
    ]);
    // Shown as acknowledged, not hidden.
    const shown = await runJson<QueuesJson>(['queues'], { cwd });
    expect(shown.code).toBe(0);
    assertMatchesSchema('queues', shown.json);
    expect(shown.json.findings).toEqual([
      expect.objectContaining({ code: 'no-consumers', acknowledged: expect.objectContaining({ reason }) }),
    ]);
    const table = await runCli(['queues'], { cwd });
    expect(table.stdout).toMatch(/ACK no-consumers rabbit\/work/);
    expect(table.stdout).toContain(`acknowledged #${finding.json.ack.id} until`);
    const list = await runJson<{ acks: Array<{ code: string; state: string }> }>(['ack', '--list'], { cwd });
    assertMatchesSchema('ack', list.json);
    expect(list.json.acks.map((a) => `${a.code}:${a.state}`)).toEqual([
      'ready:active',
      'no-consumers:active',
    ]);
    expect(await audited('ack')).toBe(2);

    await until(
      async () =>
        Number((await db.rows<{ now: number }>(`SELECT ${db.epoch('now')} AS now`))[0]?.now) >
        Number(expiry[0]?.until),
      30_000,
      'the acknowledgements to expire',
    );
    const again = await queuesQuiet();
    expect(again.code).toBe(1);
    expect(mail(again)).toContain('no-consumers rabbit/work');
    const reportAgain = await reportQuiet(['--exit-status']);
    expect(reportAgain.code).toBe(1);
    expect(mail(reportAgain)).toContain('WARNING: wrote prometheus');
    const expired = await runJson<{ acks: Array<{ state: string }> }>(['ack', '--list', '--all'], { cwd });
    expect(expired.json.acks.map((a) => a.state)).toEqual(['expired', 'expired']);
    expect((await runJson<{ acks: unknown[] }>(['ack', '--list'], { cwd })).json.acks).toEqual([]);
  }, 120_000);

  it('ack --remove ends one early (audited), and the finding counts again', async () => {
    const added = await ack([
      'no-consumers',
      '--broker',
      'rabbit',
      '--queue',
      'work',
      '--until',
      '1h',
      '--reason',
      'known',
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect((await queuesQuiet()).code).toBe(0);
    const dry = await ack(['--remove', String(added.json.ack.id), '--dry-run']);
    expect(dry.json.action).toBe('would-remove');
    expect((await queuesQuiet()).code).toBe(0);
    const removed = await ack(['--remove', String(added.json.ack.id), '--reason', 'consumer is back']);
    expect(removed.code, removed.stderr).toBe(0);
    assertMatchesSchema('ack', removed.json);
    expect(removed.json).toMatchObject({ action: 'removed', ack: { state: 'ended' } });
    expect(await audited('ack-remove')).toBe(1);
    expect((await queuesQuiet()).code).toBe(1);
    const twice = await runJson<{ error: { message: string } }>(
      ['ack', '--remove', String(added.json.ack.id)],
      { cwd },
    );
    expect(twice.code).toBe(3);
    expect(twice.json.error.message).toContain('is not active (ended)');
  }, 60_000);

  it('bad input: a clear message naming what is wrong, exit 3, nothing written; --dry-run writes nothing', async () => {
    const before = await acks();
    const auditBefore = await audited('ack');
    const cases: Array<[string[], RegExp]> = [
      [
        ['no-consumer', '--broker', 'rabbit', '--queue', 'work', '--until', '1h', '--reason', 'x'],
        /Did you mean 'no-consumers'/,
      ],
      [
        ['no-consumers', '--broker', 'rabit', '--queue', 'work', '--until', '1h', '--reason', 'x'],
        /unknown broker 'rabit'.*Did you mean 'rabbit'/s,
      ],
      [['no-consumers', '--broker', 'rabbit', '--until', '1h', '--reason', 'x'], /--queue is required/],
      [
        ['no-persistence', '--broker', 'rabbit', '--queue', 'work', '--until', '1h', '--reason', 'x'],
        /finding of the broker itself/,
      ],
      [['no-consumers', '--broker', 'rabbit', '--queue', 'work', '--reason', 'x'], /--until is required/],
      [
        ['no-consumers', '--broker', 'rabbit', '--queue', 'work', '--until', '91d', '--reason', 'x'],
        /out of range/,
      ],
      [
        ['no-consumers', '--broker', 'rabbit', '--queue', 'work', '--until', 'soon', '--reason', 'x'],
        /not a duration/,
      ],
      [
        ['no-consumers', '--broker', 'rabbit', '--queue', 'work', '--until', '1h', '--reason', '  '],
        /--reason is required/,
      ],
      [['--remove', '999999'], /no acknowledgement #999999/],
    ];
    for (const [args, pattern] of cases) {
      const run = await runJson<{ error: { message: string; hint?: string } }>(['ack', ...args], { cwd });
      expect(run.code, args.join(' ')).toBe(3);
      assertMatchesSchema('error', run.json);
      expect(`${run.json.error.message}\n${run.json.error.hint ?? ''}`, args.join(' ')).toMatch(pattern);
    }
    const dry = await ack([
      'no-consumers',
      '--broker',
      'rabbit',
      '--queue',
      'work',
      '--until',
      '1h',
      '--reason',
      'x',
      '--dry-run',
    ]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({ action: 'would-add', ack: { id: 0 } });
    expect(await acks()).toBe(before);
    expect(await audited('ack')).toBe(auditBefore);
  }, 120_000);
});
