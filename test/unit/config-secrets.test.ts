import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { resolveBrokerUrl, resolveSecret } from '../../src/config/secrets.js';

const dir = mkdtempSync(join(tmpdir(), 'taskrecon-secrets-unit-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const rabbit = { kind: 'rabbitmq' as const };

describe('secret forms', () => {
  it('inline, environment, file (one trailing newline dropped), or none', () => {
    expect(resolveSecret('k', { inline: 'a' }, {})).toBe('a');
    expect(resolveSecret('k', { env: 'V' }, { V: 'b' })).toBe('b');
    expect(resolveSecret('k', { file: file('s', 'c\n') }, {})).toBe('c');
    expect(resolveSecret('k', { file: file('crlf', 'd\r\n') }, {})).toBe('d');
    expect(resolveSecret('k', {}, {})).toBeUndefined();
  });

  it('an unset or empty variable, a missing or empty file: exit 3 naming the key', () => {
    for (const [forms, env, pattern] of [
      [{ env: 'V' }, {}, /^a\.urlEnv: the environment variable V is not set$/],
      [{ env: 'V' }, { V: '' }, /V is not set/],
      [{ file: join(dir, 'missing') }, {}, /^a\.urlFile: cannot read .*missing: ENOENT$/],
      [{ file: file('blank', '\n') }, {}, /^a\.urlFile: .*blank is empty$/],
    ] as const) {
      let caught: unknown;
      try {
        resolveSecret('a.url', forms, env);
      } catch (error) {
        caught = error;
      }
      expect((caught as { exit?: number }).exit).toBe(3);
      expect((caught as Error).message).toMatch(pattern);
    }
  });

  it("passwordFile replaces the URL's password, the vhost kept as written", () => {
    const resolved = resolveBrokerUrl(
      'r',
      { ...rabbit, url: 'amqp://app:old@mq:5672/%2F', passwordFile: file('pw', 'n3w/p@ss\n') },
      {},
    );
    expect(resolved.url).toBe('amqp://app:n3w%2Fp%40ss@mq:5672/%2F');
    expect(resolveBrokerUrl('r', { ...rabbit, urlEnv: 'U' }, { U: 'amqp://x@h/v' }).url).toBe('amqp://x@h/v');
  });

  it('the config takes exactly one url form per broker and webhook, at most one secret form', () => {
    const broker = (forms: Record<string, string>) => ({ brokers: { r: { ...rabbit, ...forms } } });
    expect(() => validateConfig(broker({ urlEnv: 'U' }), 'c.yaml')).not.toThrow();
    expect(() => validateConfig(broker({ url: 'amqp://h', urlFile: 'f' }), 'c.yaml')).toThrow(
      /exactly one of url/,
    );
    expect(() => validateConfig(broker({}), 'c.yaml')).toThrow(/brokers\.r: .*exactly one of url/);
    const hook = (forms: Record<string, string>) => ({ report: { notify: [{ kind: 'slack', ...forms }] } });
    expect(() => validateConfig(hook({ urlFile: 'f', secretEnv: 'S' }), 'c.yaml')).not.toThrow();
    expect(() => validateConfig(hook({ url: 'https://h', secret: 'a', secretEnv: 'S' }), 'c.yaml')).toThrow(
      /at most one of secret/,
    );
  });
});
