import Database from 'better-sqlite3';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJson } from '../support/cli.js';
import { AMQP_HOST, scratchVhost, type ScratchVhost } from '../support/rabbitmq.js';
import { assertMatchesSchema } from '../support/schemas.js';

// Broker URLs and webhook URLs and secrets kept out of the config file: the environment-variable
// and file forms the database DSN has, each form working and each mistake a clear exit 3.

let v: ScratchVhost;
let dir: string;
let hook: Server;
let hookUrl: string;
const received: Array<{ path: string; query: URLSearchParams }> = [];

interface ErrorJson {
  error: { message: string; hint?: string };
}
interface QueuesJson {
  brokers: Array<{ name: string; url: string }>;
}

beforeAll(async () => {
  v = await scratchVhost('secrets');
  const ch = await v.channel();
  await ch.assertQueue('work', { durable: true });
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-secrets-'));
  hook = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    req.resume();
    req.on('end', () => {
      received.push({ path: url.pathname, query: url.searchParams });
      res.setHeader('content-type', 'application/json');
      res.end('{"errcode":0,"errmsg":"ok"}');
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}`;
});

afterAll(async () => {
  await v?.drop();
  await new Promise((resolve) => hook?.close(resolve));
});

/** A folder with a config of these lines; returns it. */
function configDir(name: string, lines: string[]): string {
  const cwd = join(dir, name);
  mkdirSync(cwd, { recursive: true });
  writeFileSync(join(cwd, 'taskrecon.config.yaml'), `${lines.join('\n')}\n`);
  return cwd;
}

function secretFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const rabbit = (forms: string) => [
  'brokers:',
  `  rabbit: { kind: rabbitmq, ${forms}, api: "http://127.0.0.1:15672", queues: [work] }`,
];
/** The URL with a wrong password: only a passwordFile with the right one lets it in. */
const wrongPassword = () => `amqp://guest:wrong@${AMQP_HOST}/${encodeURIComponent(v.vhost)}`;

async function expectExit3(
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  pattern: RegExp,
): Promise<void> {
  const run = await runJson<ErrorJson>(args, { cwd, env });
  expect(run.code, run.stderr).toBe(3);
  assertMatchesSchema('error', run.json);
  expect(`${run.json.error.message}\n${run.json.error.hint ?? ''}`).toMatch(pattern);
  expect(JSON.stringify(run.json)).not.toContain('guest:guest');
}

describe('broker url: url, urlEnv, urlFile, passwordFile', () => {
  it('urlEnv: the URL from an environment variable; unset, exit 3 naming the variable', async () => {
    const cwd = configDir('url-env', rabbit('urlEnv: TASKRECON_TEST_RABBIT_URL'));
    const run = await runJson<QueuesJson>(['queues'], { cwd, env: { TASKRECON_TEST_RABBIT_URL: v.amqpUrl } });
    expect(run.code, run.stderr).toBe(0);
    assertMatchesSchema('queues', run.json);
    expect(run.json.brokers[0]?.url).toBe(`amqp://guest:***@${AMQP_HOST}/${v.vhost}`);
    await expectExit3(
      cwd,
      ['queues'],
      {},
      /brokers\.rabbit\.urlEnv: the environment variable TASKRECON_TEST_RABBIT_URL is not set/,
    );
    await expectExit3(
      cwd,
      ['queues'],
      { TASKRECON_TEST_RABBIT_URL: '' },
      /TASKRECON_TEST_RABBIT_URL is not set/,
    );
  });

  it('urlFile: the URL from a file (trailing newline ignored); missing, unreadable or empty, exit 3', async () => {
    const file = secretFile('rabbit-url', `${v.amqpUrl}\n`);
    const ok = await runJson<QueuesJson>(['queues'], {
      cwd: configDir('url-file', rabbit(`urlFile: "${file}"`)),
    });
    expect(ok.code, ok.stderr).toBe(0);
    const missing = configDir('url-file-missing', rabbit(`urlFile: "${join(dir, 'nope')}"`));
    await expectExit3(missing, ['queues'], {}, /brokers\.rabbit\.urlFile: cannot read .*nope: ENOENT/);
    const folder = configDir('url-file-dir', rabbit(`urlFile: "${dir}"`));
    await expectExit3(folder, ['queues'], {}, /brokers\.rabbit\.urlFile: cannot read .*: EISDIR/);
    const empty = configDir('url-file-empty', rabbit(`urlFile: "${secretFile('empty', '\n')}"`));
    await expectExit3(empty, ['queues'], {}, /brokers\.rabbit\.urlFile: .* is empty/);
  });

  it('passwordFile replaces the password of the URL (the API takes it too); missing, exit 3', async () => {
    const noPassword = configDir('password-wrong', rabbit(`url: "${wrongPassword()}"`));
    const refused = await runJson<ErrorJson>(['queues'], { cwd: noPassword });
    expect(refused.code).toBe(3);
    const file = secretFile('rabbit-password', 'guest\n');
    const cwd = configDir('password-file', rabbit(`url: "${wrongPassword()}", passwordFile: "${file}"`));
    const run = await runJson<QueuesJson>(['queues'], { cwd });
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.brokers[0]?.url).toBe(`amqp://guest:***@${AMQP_HOST}/${v.vhost}`);
    const missing = configDir(
      'password-missing',
      rabbit(`url: "${wrongPassword()}", passwordFile: "${join(dir, 'nope')}"`),
    );
    await expectExit3(missing, ['queues'], {}, /brokers\.rabbit\.passwordFile: cannot read .*: ENOENT/);
  });

  it('a Redis broker takes urlEnv too', async () => {
    const cwd = configDir('redis-env', [
      'brokers:',
      `  cache: { kind: redis, urlEnv: TASKRECON_TEST_REDIS_URL, framework: laravel, prefix: "taskrecon-secrets-${randomBytes(3).toString('hex')}:", queues: [default] }`,
    ]);
    const run = await runJson<QueuesJson>(['queues'], {
      cwd,
      env: { TASKRECON_TEST_REDIS_URL: 'redis://127.0.0.1:6379/11' },
    });
    expect([0, 1], run.stderr).toContain(run.code);
    expect(run.json.brokers[0]?.url).toContain('127.0.0.1:6379/11');
    await expectExit3(
      cwd,
      ['queues'],
      {},
      /brokers\.cache\.urlEnv: the environment variable TASKRECON_TEST_REDIS_URL is not set/,
    );
  });

  it('two forms at once, or none, is a config error naming the broker', async () => {
    const both = configDir('both', rabbit(`url: "${v.amqpUrl}", urlEnv: X`));
    await expectExit3(both, ['queues'], {}, /brokers\.rabbit.*exactly one of url, urlEnv .* and urlFile/);
    const none = configDir('none', [
      'brokers:',
      '  rabbit: { kind: rabbitmq, api: "http://127.0.0.1:15672" }',
    ]);
    await expectExit3(none, ['queues'], {}, /brokers\.rabbit.*exactly one of url, urlEnv .* and urlFile/);
  });
});

describe('webhook url and secret: urlEnv, urlFile, secretEnv, secretFile', () => {
  let db: string;
  beforeAll(() => {
    const path = join(dir, 'report.sqlite');
    db = `sqlite:${path}`;
    const sqlite = new Database(path);
    sqlite.exec(`CREATE TABLE async_task (id INTEGER PRIMARY KEY AUTOINCREMENT, biz_type VARCHAR(64) NOT NULL,
      biz_id VARCHAR(64) NOT NULL, event_id VARCHAR(64), payload TEXT, status TINYINT NOT NULL DEFAULT 0,
      retry_count INT NOT NULL DEFAULT 0, next_retry_time DATETIME, last_error TEXT,
      created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP)`);
    // Half of the window failed: CRITICAL, so --notify sends.
    sqlite.exec(`INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error) VALUES
      ('coupon', 'o1', 'e1', 3, 8, 'HTTP 500'), ('coupon', 'o2', 'e2', 2, 0, NULL)`);
    sqlite.close();
  });
  const notify = (forms: string) => [
    `db: ${db}`,
    'report:',
    '  notify:',
    `    - { kind: dingtalk, ${forms} }`,
  ];

  it('urlEnv and secretFile: the webhook is called at the URL from the environment, signed with the secret from the file', async () => {
    const secret = 'SECfromfile';
    const file = secretFile('ding-secret', `${secret}\n`);
    const cwd = configDir('hook-env', notify(`urlEnv: TASKRECON_TEST_HOOK, secretFile: "${file}"`));
    received.length = 0;
    const run = await runJson<{ notifications: Array<{ outcome: string }> }>(['report', '--notify'], {
      cwd,
      env: { TASKRECON_TEST_HOOK: `${hookUrl}/from-env?access_token=T` },
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.json.notifications.map((n) => n.outcome)).toEqual(['sent']);
    expect(received.map((r) => r.path)).toEqual(['/from-env']);
    const timestamp = received[0]?.query.get('timestamp') as string;
    expect(received[0]?.query.get('sign')).toBe(
      createHmac('sha256', secret).update(`${timestamp}\n${secret}`).digest('base64'),
    );
  });

  it('urlFile and secretEnv', async () => {
    const file = secretFile('ding-url', `${hookUrl}/from-file?access_token=T\n`);
    const cwd = configDir('hook-file', notify(`urlFile: "${file}", secretEnv: TASKRECON_TEST_HOOK_SECRET`));
    received.length = 0;
    const run = await runJson(['report', '--notify', '--notify-cooldown', '1s'], {
      cwd,
      env: { TASKRECON_TEST_HOOK_SECRET: 'SECfromenv' },
    });
    expect(run.code, run.stderr).toBe(2);
    expect(received.map((r) => r.path)).toEqual(['/from-file']);
    const timestamp = received[0]?.query.get('timestamp') as string;
    expect(received[0]?.query.get('sign')).toBe(
      createHmac('sha256', 'SECfromenv').update(`${timestamp}\nSECfromenv`).digest('base64'),
    );
  });

  it('an unset variable or a missing file: exit 3 naming the key, nothing sent', async () => {
    received.length = 0;
    const unsetUrl = configDir('hook-unset', notify('urlEnv: TASKRECON_TEST_HOOK_UNSET'));
    await expectExit3(
      unsetUrl,
      ['report', '--notify'],
      {},
      /report\.notify\[0\]\.urlEnv: the environment variable TASKRECON_TEST_HOOK_UNSET is not set/,
    );
    const unsetSecret = configDir(
      'hook-secret-unset',
      notify(`url: "${hookUrl}/x", secretEnv: TASKRECON_TEST_NOPE`),
    );
    await expectExit3(
      unsetSecret,
      ['report', '--notify'],
      {},
      /report\.notify\[0\]\.secretEnv: .*TASKRECON_TEST_NOPE is not set/,
    );
    const missing = configDir(
      'hook-missing',
      notify(`url: "${hookUrl}/x", secretFile: "${join(dir, 'nope')}"`),
    );
    await expectExit3(
      missing,
      ['report', '--notify'],
      {},
      /report\.notify\[0\]\.secretFile: cannot read .*: ENOENT/,
    );
    const missingUrl = configDir('hook-url-missing', notify(`urlFile: "${join(dir, 'nope')}"`));
    await expectExit3(
      missingUrl,
      ['report', '--notify'],
      {},
      /report\.notify\[0\]\.urlFile: cannot read .*: ENOENT/,
    );
    const both = configDir(
      'hook-both',
      notify(`url: "${hookUrl}/x", secret: a, secretFile: "${join(dir, 'nope')}"`),
    );
    await expectExit3(both, ['report', '--notify'], {}, /at most one of secret, secretEnv and secretFile/);
    expect(received).toEqual([]);
  });
});
