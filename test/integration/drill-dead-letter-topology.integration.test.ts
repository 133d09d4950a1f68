import type { Channel } from 'amqplib';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { BIN, runCli, runJson } from '../support/cli.js';
import {
  api,
  declareArticleTopology,
  declareCorrectTopology,
  scratchVhost,
  until,
  type ScratchVhost,
} from '../support/rabbitmq.js';

// The dead-letter-topology drill through the CLI: it passes on a correct retry topology, fails
// (exit 1, a JUnit failure) on the classic article's, and leaves no scratch object behind.

let good: ScratchVhost;
let article: ScratchVhost;
let cwd: string;

interface DrillJson {
  passed: number;
  failed: number;
  scenarios: Array<{
    name: string;
    status: string;
    steps: Array<{ name: string; status: string; detail: string }>;
  }>;
}

async function scratchLeft(v: ScratchVhost): Promise<string[]> {
  const queues = (await api('GET', `/queues/${encodeURIComponent(v.vhost)}`)).json as Array<{ name: string }>;
  const exchanges = (await api('GET', `/exchanges/${encodeURIComponent(v.vhost)}`)).json as Array<{
    name: string;
  }>;
  return [...queues, ...exchanges].map((o) => o.name).filter((n) => n.startsWith('taskrecon-drill-'));
}

beforeAll(async () => {
  good = await scratchVhost('drill-good');
  article = await scratchVhost('drill-article');
  const g: Channel = await good.channel();
  await declareCorrectTopology(g);
  const a: Channel = await article.channel();
  await declareArticleTopology(a);
  await a.assertQueue('parking_queue', { durable: true });
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-drill-rabbit-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      'brokers:',
      `  good: { kind: rabbitmq, url: "${good.amqpUrl}", api: "${good.apiUrl}", maxRetries: 3 }`,
      `  article: { kind: rabbitmq, url: "${article.amqpUrl}", api: "${article.apiUrl}", maxRetries: 3 }`,
      `  noapi: { kind: rabbitmq, url: "${good.amqpUrl}" }`,
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await good?.drop();
  await article?.drop();
  rmSync(cwd, { recursive: true, force: true });
});

const drill = (broker: string, extra: string[] = []) =>
  runJson<DrillJson>(
    [
      'drill',
      '--scenario',
      'dead-letter-topology',
      '--broker',
      broker,
      '--queue',
      'business_queue',
      ...extra,
    ],
    { cwd },
  );

describe('drill --scenario dead-letter-topology', () => {
  it('passes on a correct topology: three rejections, each back with a rising x-death count, then parked', async () => {
    const run = await drill('good');
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ passed: 1, failed: 0 });
    const steps = run.json.scenarios[0]?.steps ?? [];
    expect(steps.map((s) => s.status)).toEqual(Array(steps.length).fill('passed'));
    expect(steps.map((s) => s.name)).toContain('rejection 3 of 3: it comes back with x-death count 3');
    expect(steps.at(-1)?.detail).toMatch(
      /parked in 'parking_queue' with expired×3 \(retry_queue\), rejected×3 \(business_queue\)/,
    );
    expect(await scratchLeft(good)).toEqual([]);
  });

  it("fails on the article's topology: the delay queue drops the message; JUnit names the step", async () => {
    const junit = join(cwd, 'drill.xml');
    const run = await drill('article', ['--junit', junit]);
    expect(run.code, run.stderr).toBe(1);
    expect(run.json).toMatchObject({ passed: 0, failed: 1 });
    const failed = run.json.scenarios[0]?.steps.find((s) => s.status === 'failed');
    expect(failed?.name).toBe('rejection 1 of 3: it comes back with x-death count 1');
    expect(failed?.detail).toMatch(
      /dropped by the topology: queue 'retry_queue' has a message TTL .* and no dead-letter exchange/,
    );
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/<failure message="[^"]*dropped by the topology/);
    expect(await scratchLeft(article)).toEqual([]);
  });

  it('Ctrl-C in the middle removes the scratch queues and exchanges', async () => {
    // On the article's topology the drill waits seconds for a message that never comes back.
    const child = spawn(
      process.execPath,
      [
        BIN,
        'drill',
        '--scenario',
        'dead-letter-topology',
        '--broker',
        'article',
        '--queue',
        'business_queue',
      ],
      { cwd, stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } },
    );
    await until(async () => (await scratchLeft(article)).length > 0, 20_000, 'the scratch copies');
    await new Promise((r) => setTimeout(r, 500));
    child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => child.once('close', r));
    expect(code).toBe(130);
    expect(await scratchLeft(article)).toEqual([]);
  });

  it('bad input is exit 3 before any step: no --queue, no api:, a queue that does not exist', async () => {
    const noQueue = await runJson<{ error: { message: string } }>(
      ['drill', '--scenario', 'dead-letter-topology', '--broker', 'good'],
      { cwd },
    );
    expect(noQueue.code).toBe(3);
    expect(noQueue.json.error.message).toMatch(/needs --broker NAME and --queue QUEUE/);
    const noApi = await drill('noapi');
    expect(noApi.code).toBe(3);
    const missing = await runJson<{ error: { message: string } }>(
      ['drill', '--scenario', 'dead-letter-topology', '--broker', 'good', '--queue', 'nope'],
      { cwd },
    );
    expect(missing.code).toBe(3);
    expect(missing.json.error.message).toMatch(/queue 'nope' does not exist/);
  });

  it('without a broker the scenario is skipped with one line saying how to run it', async () => {
    const run = await runCli(['drill', '--scenario', 'permanent-error'], { cwd });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      'dead-letter-topology: skipped (needs a RabbitMQ broker): run drill --scenario dead-letter-topology --broker NAME --queue QUEUE',
    );
  });
});
