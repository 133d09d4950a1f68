/**
 * PHP's `json_encode(json_decode($text, true))` in TypeScript, byte for byte, so a payload that
 * taskrecon re-pushes is exactly what Laravel's and think-queue's `queue:retry` would push (both
 * decode the failed row's payload to an array, reset `attempts`, and encode it with default flags).
 *
 * What the round trip changes, as PHP does it:
 * - `/` is escaped as `\/`, every non-ASCII character as `\uxxxx` (lower-case hex, UTF-16 pairs);
 * - an object decoded to an array whose keys are 0..n-1 in order (including `{}`) becomes a list;
 * - numbers: integers within 64 bits stay as written (`-0` becomes `0`); other numbers are PHP
 *   floats, printed with the shortest round-trip digits (`1.0` → `1`, `1e25` → `1.0e+25`).
 */

export type PhpValue = null | boolean | string | PhpNumber | PhpValue[] | PhpArray;

/** A number as written in the source text; its PHP type is decided when it is encoded. */
export interface PhpNumber {
  kind: 'number';
  text: string;
}

/** A PHP array decoded from a JSON object: keys in order (numeric-string keys become ints, as PHP does). */
export interface PhpArray {
  kind: 'array';
  entries: Map<string | number, PhpValue>;
}

export class PhpJsonError extends Error {}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** PHP turns a decimal-integer string key ("12", "-3", not "012" or "1.0") into an int key. */
function phpKey(key: string): string | number {
  if (/^(0|-?[1-9]\d*)$/.test(key) && key !== '-0') {
    const big = BigInt(key);
    if (big >= INT64_MIN && big <= INT64_MAX) return Number.isSafeInteger(Number(key)) ? Number(key) : key;
  }
  return key;
}

/** json_decode($text, true), keeping number tokens as written. Throws PhpJsonError where PHP returns null. */
export function phpJsonDecode(text: string): PhpValue {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const fail = (what: string): never => {
    throw new PhpJsonError(`${what} at offset ${i}`);
  };
  const value = (): PhpValue => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const entries = new Map<string | number, PhpValue>();
      ws();
      if (text[i] === '}') {
        i++;
        return { kind: 'array', entries };
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const key = phpKey(string());
        ws();
        if (text[i] !== ':') fail("expected ':'");
        i++;
        const v = value();
        // A repeated key keeps its first position and takes the last value, as a PHP array does.
        entries.set(key, v);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return { kind: 'array', entries };
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      const items: PhpValue[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return items;
      }
      for (;;) {
        items.push(value());
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return items;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    const literal = /^(?:true|false|null)/.exec(text.slice(i, i + 5));
    if (literal) {
      i += literal[0].length;
      return literal[0] === 'null' ? null : literal[0] === 'true';
    }
    const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (number) {
      i += number[0].length;
      return { kind: 'number', text: number[0] };
    }
    return fail('unexpected character');
  };
  const string = (): string => {
    i++; // opening quote
    let out = '';
    for (;;) {
      const c = text[i];
      if (c === undefined) fail('unterminated string');
      if (c === '"') {
        i++;
        return out;
      }
      if (c === '\\') {
        const e = text[i + 1];
        const simple: Record<string, string> = {
          '"': '"',
          '\\': '\\',
          '/': '/',
          b: '\b',
          f: '\f',
          n: '\n',
          r: '\r',
          t: '\t',
        };
        if (e !== undefined && simple[e] !== undefined) {
          out += simple[e];
          i += 2;
          continue;
        }
        if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
          const unit = parseInt(text.slice(i + 2, i + 6), 16);
          i += 6;
          if (unit >= 0xd800 && unit <= 0xdbff) {
            const low = /^\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(text.slice(i, i + 6));
            if (!low) fail('a lone UTF-16 surrogate');
            out += String.fromCharCode(unit, parseInt((low as RegExpExecArray)[1] as string, 16));
            i += 6;
          } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            fail('a lone UTF-16 surrogate');
          } else {
            out += String.fromCharCode(unit);
          }
          continue;
        }
        fail('a bad escape');
      }
      if ((c as string).charCodeAt(0) < 0x20) fail('a control character in a string');
      out += c;
      i++;
    }
  };
  const result = value();
  ws();
  if (i !== text.length) fail('trailing characters');
  return result;
}

/** json_encode($value) with PHP's default flags. */
export function phpJsonEncode(value: PhpValue): string {
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'string') return encodeString(value);
  if (Array.isArray(value)) return `[${value.map(phpJsonEncode).join(',')}]`;
  if (value.kind === 'number') return encodeNumber(value.text);
  const entries = [...value.entries];
  const isList = entries.every(([key], index) => key === index);
  if (isList) return `[${entries.map(([, v]) => phpJsonEncode(v)).join(',')}]`;
  return `{${entries.map(([k, v]) => `${encodeString(String(k))}:${phpJsonEncode(v)}`).join(',')}}`;
}

function encodeString(text: string): string {
  let out = '"';
  for (let k = 0; k < text.length; k++) {
    const code = text.charCodeAt(k);
    const c = text[k] as string;
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c === '/') out += '\\/';
    else if (c === '\b') out += '\\b';
    else if (c === '\f') out += '\\f';
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (code < 0x20 || code > 0x7f) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += c;
  }
  return `${out}"`;
}

function encodeNumber(text: string): string {
  if (/^-?\d+$/.test(text)) {
    const big = BigInt(text);
    if (big >= INT64_MIN && big <= INT64_MAX) return big.toString();
  }
  return phpFloat(Number(text));
}

/** PHP's float printing with serialize_precision -1 (php_gcvt, mode 0, threshold 17 digits). */
export function phpFloat(x: number): string {
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const sign = x < 0 ? '-' : '';
  const [mantissa, exponent] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const decpt = Number(exponent) + 1; // value = 0.digits × 10^decpt
  if (decpt < 0 ? decpt < -3 : decpt > 17) {
    const e = decpt - 1;
    return `${sign}${digits[0]}.${digits.length > 1 ? digits.slice(1) : '0'}e${e < 0 ? '-' : '+'}${Math.abs(e)}`;
  }
  if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
  if (digits.length <= decpt) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

/** Reads a top-level key of a decoded payload. */
export function phpGet(value: PhpValue, key: string): PhpValue | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value.kind !== 'array')
    return undefined;
  return value.entries.get(phpKey(key));
}

/**
 * The `resetAttempts` of Laravel's and think-queue's RetryCommand: decode, set `attempts` to 0
 * when it is set (isset: present and not null), encode. Throws PhpJsonError for a payload PHP
 * could not decode into an array.
 */
export function resetAttempts(payloadText: string): string {
  const decoded = phpJsonDecode(payloadText);
  if (decoded === null || typeof decoded !== 'object' || Array.isArray(decoded) || decoded.kind !== 'array') {
    throw new PhpJsonError('the payload is not a JSON object');
  }
  const attempts = decoded.entries.get('attempts');
  if (attempts !== undefined && attempts !== null)
    decoded.entries.set('attempts', { kind: 'number', text: '0' });
  return phpJsonEncode(decoded);
}
