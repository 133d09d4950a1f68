import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type Server } from 'node:http';
import {
  closedLoopbackPort,
  startCountingHandler,
  type CountingHandler,
} from '../fixtures/redrive/counting-handler.js';
import { CommandDispatcher, fillTemplate } from '../../src/dispatch/command.js';
import { HttpDispatcher } from '../../src/dispatch/http.js';
import { registryFromConfig } from '../../src/dispatch/registry.js';
import type { DispatchTask } from '../../src/dispatch/types.js';

// Loopback only: a counting handler, a closed port and a listener that never answers.
const PROCESSOR = fileURLToPath(new URL('../fixtures/redrive/processor.js', import.meta.url));
const task: DispatchTask = {
  id: 12,
  bizType: 'coupon',
  bizId: 'order-9',
  eventId: 'evt-9',
  payload: { a: 1 },
  payloadText: '{"a":1}',
  attempt: 2,
};
const context = () => ({ signal: new AbortController().signal });

let handler: CountingHandler;
let silent: Server;
let silentUrl: string;

beforeAll(async () => {
  handler = await startCountingHandler({
    behaviour: (d) => {
      if (d.bizId === 'teapot') return { status: 418 };
      if (d.bizId === 'busy') return { status: 503, retryAfter: 'Wed, 21 Oct 2099 07:28:00 GMT' };
      return undefined;
    },
  });
  silent = createServer(() => undefined); // accepts, never answers
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}/`;
});

afterAll(async () => {
  await handler?.close();
  silent?.closeAllConnections();
  await new Promise((r) => silent?.close(r));
});

describe('http dispatcher', () => {
  it('posts the contract body with Idempotency-Key and succeeds on 2xx', async () => {
    const http = new HttpDispatcher({ url: handler.url, timeoutMs: 2000 });
    expect(await http.dispatch(task, context())).toEqual({ outcome: 'success' });
    expect(handler.byAttempt.get('evt-9#2')).toBe(1);
    expect(handler.effects.get('evt-9')).toBe(1);
    await http.close();
  });

  it('classifies 4xx as permanent and 5xx as retryable, passing on Retry-After (capped later by the policy)', async () => {
    const http = new HttpDispatcher({ url: handler.url, timeoutMs: 2000 });
    expect(await http.dispatch({ ...task, bizId: 'teapot' }, context())).toMatchObject({
      outcome: 'permanent',
      error: expect.stringMatching(/^HTTP 418/),
    });
    const busy = await http.dispatch({ ...task, bizId: 'busy' }, context());
    expect(busy.outcome).toBe('retryable');
    expect(busy.retryAfterMs).toBeGreaterThan(1e9);
    await http.close();
  });

  it('a refused connection and a listener that never answers are retryable, the latter after the timeout', async () => {
    const refused = new HttpDispatcher({
      url: `http://127.0.0.1:${await closedLoopbackPort()}/`,
      timeoutMs: 1000,
    });
    expect(await refused.dispatch(task, context())).toMatchObject({
      outcome: 'retryable',
      error: expect.stringContaining('ECONNREFUSED'),
    });
    const hang = new HttpDispatcher({ url: silentUrl, timeoutMs: 300 });
    const started = Date.now();
    expect(await hang.dispatch(task, context())).toMatchObject({
      outcome: 'retryable',
      error: expect.stringMatching(/^timeout after 300 ms/),
    });
    expect(Date.now() - started).toBeLessThan(3000);
    await Promise.all([refused.close(), hang.close()]);
  });

  it('a payload that is not JSON is permanent and never sent', async () => {
    const http = new HttpDispatcher({ url: handler.url, timeoutMs: 1000 });
    const before = handler.stats().total;
    expect(await http.dispatch({ ...task, payloadText: '{oops' }, context())).toMatchObject({
      outcome: 'permanent',
      error: expect.stringMatching(/^bad payload/),
    });
    expect(handler.stats().total).toBe(before);
    await http.close();
  });
});

describe('command dispatcher', () => {
  it('fills argv placeholders without a shell and passes the payload on stdin', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'taskrecon-cmd-')), 'record.txt');
    const cmd = new CommandDispatcher({
      argv: [
        process.execPath,
        PROCESSOR,
        'record',
        out,
        '{id}',
        '{eventId}',
        '{bizType}',
        '{bizId};rm -rf /',
      ],
      timeoutMs: 5000,
    });
    expect(await cmd.dispatch(task, context())).toEqual({ outcome: 'success' });
    expect(readFileSync(out, 'utf8')).toBe('12 evt-9 coupon order-9;rm -rf /\t{"a":1}\n');
    expect(fillTemplate('{unknown}-{id}', task)).toBe('{unknown}-12');
  });

  it('maps exits: 75 retryable, 2 permanent, a deadlock message retryable, a crash permanent, a hang retryable after the timeout', async () => {
    const run = (mode: string, timeoutMs = 5000) =>
      new CommandDispatcher({ argv: [process.execPath, PROCESSOR, mode], timeoutMs }).dispatch(
        task,
        context(),
      );
    expect(await run('tempfail')).toMatchObject({
      outcome: 'retryable',
      error: expect.stringContaining('exit 75'),
    });
    expect(await run('fail')).toMatchObject({
      outcome: 'permanent',
      error: expect.stringContaining('invalid coupon template'),
    });
    expect((await run('deadlock')).outcome).toBe('retryable');
    expect(await run('crash')).toMatchObject({
      outcome: 'permanent',
      error: expect.stringContaining('SIGKILL'),
    });
    expect(await run('hang', 300)).toMatchObject({
      outcome: 'retryable',
      error: expect.stringMatching(/^timeout after 300 ms/),
    });
  });

  it('a missing program is reported, not thrown', async () => {
    const cmd = new CommandDispatcher({ argv: ['/nonexistent/taskrecon-handler'], timeoutMs: 1000 });
    expect(await cmd.dispatch(task, context())).toMatchObject({
      outcome: 'permanent',
      error: expect.stringContaining('ENOENT'),
    });
  });
});

describe('registry', () => {
  it('picks the biz type, then default; an unknown type without default gets none; queue re-pushers are left to compensate', async () => {
    const registry = registryFromConfig({
      coupon: { type: 'mark-only' },
      failed: { type: 'laravel-queue' },
    });
    expect(registry.forBizType('coupon')?.kind).toBe('mark-only');
    expect(registry.forBizType('sms')).toBeUndefined();
    expect(registry.forBizType(null)).toBeUndefined();
    expect([...registry.unsupported]).toEqual([['failed', 'laravel-queue']]);
    const withDefault = registryFromConfig({ default: { type: 'command', argv: ['true'] } });
    expect(withDefault.forBizType('anything')?.kind).toBe('command');
    expect(() => registryFromConfig({ x: { type: 'http', url: 'not a url' } })).toThrow(/handlers\.x\.url/);
    await registry.close();
  });
});
