import { execSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBroker } from '../../src/brokers/open/index.js';
import { openRedisBroker } from '../../src/brokers/redis/index.js';
import { ensureAptPackages } from '../support/apt.js';
import { runCli, runJson } from '../support/cli.js';
import {
  freePort,
  openTestRedis,
  startPrivateRedis,
  waitForPort,
  type PrivateRedis,
} from '../support/redis.js';

// Server-wide findings and connection failures, on private redis-server processes started with the
// settings under test (the shared server is never reconfigured): no-persistence, evicting (crit),
// CONFIG refused (INFO answers), a wrong or missing password, an unreachable port; doctor's checks.

interface QueuesJson {
  brokers: Array<{ url: string }>;
  findings: Array<{ code: string; level: string; queue: string | null }>;
}

const servers: PrivateRedis[] = [];
async function server(args: string[], password?: string): Promise<PrivateRedis> {
  const started = await startPrivateRedis(args, password);
  servers.push(started);
  return started;
}

async function seeded(url: string, password?: string): Promise<void> {
  const port = Number(new URL(url).port);
  const redis: Redis = await openTestRedis(0, port, password);
  await redis.rpush('queues:default', JSON.stringify({ uuid: 'j1', attempts: 0 }));
  redis.disconnect();
}

const codes = (json: QueuesJson) => json.findings.map((f) => f.code).sort();
const inspect = (url: string) =>
  runJson<QueuesJson>(['queues', '--redis', url, '--framework', 'laravel', '--queue', 'default']);

let durable: PrivateRedis;

beforeAll(async () => {
  // private servers are started from the redis-server binary; the TLS test makes its certificates with openssl
  ensureAptPackages(['redis-server', 'openssl']);
  durable = await server([
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--maxmemory-policy',
    'noeviction',
  ]);
  await seeded(durable.url);
}, 30_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

describe('server findings', () => {
  it('a durable, non-evicting Redis with a healthy queue: no finding, exit 0', async () => {
    const { code, json } = await inspect(durable.url);
    expect(json.findings).toEqual([]);
    expect(code).toBe(0);
  });

  it('no-persistence when appendonly is off, and when appendfsync is no', async () => {
    const off = await server(['--appendonly', 'no']);
    await seeded(off.url);
    const a = await inspect(off.url);
    expect(codes(a.json)).toEqual(['no-persistence']);
    expect(a.code).toBe(1);
    const weak = await server(['--appendonly', 'yes', '--appendfsync', 'no']);
    await seeded(weak.url);
    const b = await inspect(weak.url);
    expect(b.json.findings).toEqual([
      expect.objectContaining({ code: 'no-persistence', level: 'warn', queue: null }),
    ]);
  });

  it('evicting (crit, exit 2) with allkeys-lru; volatile-lru only when a queue key has a TTL', async () => {
    const lru = await server(['--appendonly', 'yes', '--maxmemory-policy', 'allkeys-lru']);
    await seeded(lru.url);
    const a = await inspect(lru.url);
    expect(a.json.findings).toEqual([expect.objectContaining({ code: 'evicting', level: 'crit' })]);
    expect(a.code).toBe(2);
    const volatile = await server(['--appendonly', 'yes', '--maxmemory-policy', 'volatile-lru']);
    await seeded(volatile.url);
    expect(codes((await inspect(volatile.url)).json)).toEqual([]);
    const redis = await openTestRedis(0, volatile.port);
    await redis.expire('queues:default', 3600);
    redis.disconnect();
    expect(codes((await inspect(volatile.url)).json)).toEqual(['evicting']);
  });

  it('reads persistence from INFO when CONFIG is refused', async () => {
    const locked = await server(['--appendonly', 'no', '--rename-command', 'CONFIG', '""']);
    await seeded(locked.url);
    const { json } = await inspect(locked.url);
    expect(codes(json)).toEqual(['no-persistence']);
  });
});

describe('connection failures: clear message, exit 3', () => {
  it('an unreachable port', async () => {
    const port = await freePort();
    const { code, json } = await runJson<{ error: { message: string; hint: string } }>([
      'queues',
      '--redis',
      `redis://127.0.0.1:${port}/0`,
    ]);
    expect(code).toBe(3);
    expect(json.error.message).toContain(`cannot reach Redis at redis://127.0.0.1:${port}/0`);
    expect(json.error.hint).toContain('redis-cli');
  });

  it('a wrong password and a missing one, the password masked', async () => {
    const locked = await server(['--requirepass', 's3cret-pw'], 's3cret-pw');
    const wrong = await runCli(['queues', '--redis', `redis://:not-it@127.0.0.1:${locked.port}/0`]);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toContain(`Redis at redis://:***@127.0.0.1:${locked.port}/0 refused the password`);
    expect(wrong.stderr + wrong.stdout).not.toContain('not-it');
    const missing = await runCli(['queues', '--redis', `redis://127.0.0.1:${locked.port}/0`]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('requires a password');
    await seeded(`redis://127.0.0.1:${locked.port}/0`, 's3cret-pw');
    const right = await runJson<QueuesJson>(['queues', '--redis', locked.url, '--framework', 'laravel']);
    expect(right.code).toBeLessThan(3);
    expect(right.json.brokers[0]?.url).toBe(`redis://:***@127.0.0.1:${locked.port}/0`);
    expect(JSON.stringify(right.json)).not.toContain('s3cret-pw');
  });

  it('a DB index the server does not have', async () => {
    const result = await runCli(['queues', '--redis', `${durable.url.replace(/\/0$/, '/64')}`]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('has no DB 64');
  });
});

describe('doctor checks of a Redis broker', () => {
  it('says ok for a durable server and fail for an evicting one', async () => {
    // through the registry, as report, doctor and the console open brokers
    const ok = await openBroker('ok', {
      kind: 'redis',
      url: durable.url,
      framework: 'laravel',
      prefix: '',
    });
    const okChecks = await ok.doctor();
    await ok.close();
    expect(okChecks.map((c) => [c.name, c.status])).toEqual([
      ['ok: reachable', 'ok'],
      ['ok: persistence', 'ok'],
      ['ok: eviction policy', 'ok'],
      ['ok: key layout', 'ok'],
    ]);
    const lru = await server(['--appendonly', 'no', '--maxmemory-policy', 'allkeys-lfu']);
    await seeded(lru.url);
    const bad = await openRedisBroker('bad', { kind: 'redis', url: lru.url, framework: 'thinkphp' });
    const badChecks = await bad.doctor();
    await bad.close();
    expect(badChecks.map((c) => [c.name, c.status])).toEqual([
      ['bad: reachable', 'ok'],
      ['bad: persistence', 'warn'],
      ['bad: eviction policy', 'fail'],
      ['bad: key layout', 'warn'],
    ]);
    // think-queue ≥ 3.0.5 configured, the legacy queues:Q keys found
    expect(badChecks[3]?.detail).toContain('thinkphp-legacy');
  });
});

describe('rediss:// (TLS)', () => {
  it('connects over TLS to a server whose CA is trusted, and refuses an untrusted certificate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskrecon-tls-'));
    const sh = (cmd: string) => execSync(cmd, { cwd: dir, stdio: 'pipe' });
    sh(
      'openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=taskrecon-test-ca"',
    );
    sh('openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1"');
    writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
    sh(
      'openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf',
    );
    const port = await freePort();
    const child = spawn(
      'redis-server',
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--tls-cert-file',
        'server.pem',
        '--tls-key-file',
        'server.key',
        '--tls-ca-cert-file',
        'ca.pem',
        '--tls-auth-clients',
        'no',
        '--save',
        '',
        '--dir',
        dir,
      ],
      { cwd: dir, stdio: 'ignore' },
    );
    try {
      await waitForPort(port);
      const url = `rediss://127.0.0.1:${port}/0`;
      const trusted = await runJson<QueuesJson>(['queues', '--redis', url, '--queue', 'x'], {
        env: { NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') },
      });
      expect(trusted.code).toBeLessThan(3);
      expect(trusted.json.brokers[0]?.url).toBe(url);
      const untrusted = await runCli(['queues', '--redis', url, '--queue', 'x']);
      expect(untrusted.code).toBe(3);
      expect(untrusted.stderr).toContain('certificate');
    } finally {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
