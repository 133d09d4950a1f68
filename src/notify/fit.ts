/**
 * Making a message fit a kind's size limit: text is cut on a character boundary (never inside a
 * UTF-8 sequence or a surrogate pair) and marked as cut, so the endpoint never rejects it for size.
 */
export const TRUNCATION_MARK = '\n…(truncated)';

export const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** The longest prefix of `text` (plus the mark) whose size by `measure` is ≤ max. */
export function fitText(text: string, max: number, measure: (s: string) => number = utf8Bytes): string {
  if (measure(text) <= max) return text;
  const chars = Array.from(text);
  let lo = 0;
  let hi = chars.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (measure(chars.slice(0, mid).join('') + TRUNCATION_MARK) <= max) lo = mid;
    else hi = mid - 1;
  }
  return chars.slice(0, lo).join('') + TRUNCATION_MARK;
}

/**
 * Builds a body from text and shrinks the text until the serialised body fits `maxBytes`
 * (JSON escaping makes the body grow faster than the text, so the fit is measured on the body).
 */
export function fitBody(text: string, maxBytes: number, build: (text: string) => string): string {
  let body = build(text);
  if (utf8Bytes(body) <= maxBytes) return body;
  const chars = Array.from(text);
  let lo = 0;
  let hi = chars.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (utf8Bytes(build(chars.slice(0, mid).join('') + TRUNCATION_MARK)) <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  body = build(chars.slice(0, lo).join('') + TRUNCATION_MARK);
  return body;
}
