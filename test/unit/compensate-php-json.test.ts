import { describe, expect, it } from 'vitest';
import { phpFloat, phpJsonDecode, phpJsonEncode, resetAttempts } from '../../src/dispatch/php-json.js';
import { laravelQueue } from '../../src/dispatch/laravel-queue.js';

// Expected strings are what PHP 7.1+/8 prints for json_encode(json_decode($stored, true)) with default flags.
describe("PHP's json_encode(json_decode(...)) round trip of queue:retry", () => {
  it('resets attempts of a Laravel Redis job and leaves every other byte as PHP writes it', () => {
    const stored =
      '{"uuid":"0b6c4a2e-8f0e-4d8e-9a3e-1c2d3e4f5a6b","displayName":"App\\\\Jobs\\\\SendSms","job":"Illuminate\\\\Queue\\\\CallQueuedHandler@call",' +
      '"maxTries":3,"maxExceptions":null,"failOnTimeout":false,"backoff":null,"timeout":null,"retryUntil":null,' +
      '"data":{"commandName":"App\\\\Jobs\\\\SendSms","command":"O:16:\\"App\\\\Jobs\\\\SendSms\\":1:{s:5:\\"phone\\";s:11:\\"13800000000\\";}"},"id":"XyZ","attempts":3}';
    expect(resetAttempts(stored)).toBe(stored.replace('"attempts":3', '"attempts":0'));
  });

  it('escapes slashes and non-ASCII as PHP does (\\/ and \\uxxxx with UTF-16 pairs), and control characters', () => {
    const stored =
      '{"data":{"text":"短信 ok 😀","url":"https://x.test/a","ctl":"a\\u0001b\\u007f"},"attempts":1}';
    expect(resetAttempts(stored)).toBe(
      '{"data":{"text":"\\u77ed\\u4fe1 ok \\ud83d\\ude00","url":"https:\\/\\/x.test\\/a","ctl":"a\\u0001b\u007f"},"attempts":0}',
    );
  });

  it('turns objects PHP decodes into lists back into lists, and {} into []', () => {
    const stored = '{"tags":{},"map":{"0":"a","1":"b"},"sparse":{"1":"a"},"list":[1,{}],"attempts":null}';
    expect(resetAttempts(stored)).toBe(
      '{"tags":[],"map":["a","b"],"sparse":{"1":"a"},"list":[1,[]],"attempts":null}',
    );
  });

  it('prints numbers as PHP: ints kept, floats by shortest digits with PHP exponent style', () => {
    const stored =
      '{"a":1.0,"b":1.5,"c":1e25,"d":0.00001,"e":0.0001,"f":-0,"g":12345678901234567890,"h":1E2,"i":9223372036854775807,"j":-2.5e-7}';
    expect(phpJsonEncode(phpJsonDecode(stored))).toBe(
      '{"a":1,"b":1.5,"c":1.0e+25,"d":1.0e-5,"e":0.0001,"f":0,"g":1.2345678901234567e+19,"h":100,"i":9223372036854775807,"j":-2.5e-7}',
    );
    expect(phpFloat(0.1)).toBe('0.1');
    expect(phpFloat(1e17)).toBe('1.0e+17');
    expect(phpFloat(1e16)).toBe('10000000000000000');
  });

  it('keeps the first position and the last value of a repeated key, as a PHP array does', () => {
    expect(resetAttempts('{"attempts":2,"job":"a","attempts":5}')).toBe('{"attempts":0,"job":"a"}');
  });

  it('refuses what PHP cannot decode into an array', () => {
    for (const bad of ['not json', '"a string"', '{"a":"\\ud800"}', '{"a":1,}'])
      expect(() => resetAttempts(bad)).toThrow();
  });

  it("refuses a Laravel job whose retryUntil deadline passed (only the job's PHP can compute a new one)", () => {
    const payload = (until: number) =>
      `{"retryUntil":${until},"data":{"command":"O:8:\\"App\\\\Job\\":0:{}"},"attempts":2}`;
    expect(laravelQueue.retryPayload(payload(1000), 2000)).toMatchObject({
      refused: expect.stringMatching(/retryUntil deadline .* has passed/),
    });
    expect(laravelQueue.retryPayload(payload(3000), 2000)).toEqual({
      payload: payload(3000).replace('"attempts":2', '"attempts":0'),
    });
  });
});
