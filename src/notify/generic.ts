import { plainText } from './alert.js';
import { fitBody } from './fit.js';
import type { AlertFailing, NotifyKindSpec } from './types.js';

/** Generic JSON: the alert as data plus a text rendering, for any receiver; kept within 64 KiB. */
export const GENERIC_BODY_MAX_BYTES = 65_536;
/** Each string of a failing biz type in the data part is capped, so that the data cannot crowd out the text. */
const FIELD_MAX_CHARS = 500;

const cap = (s: string | null): string | null =>
  s !== null && s.length > FIELD_MAX_CHARS ? `${s.slice(0, FIELD_MAX_CHARS - 1)}…` : s;

function capped(f: AlertFailing): AlertFailing {
  const sample = f.sample && {
    ...f.sample,
    bizId: cap(f.sample.bizId),
    eventId: cap(f.sample.eventId),
    error: cap(f.sample.error),
  };
  return { ...f, bizType: cap(f.bizType), sample };
}

export const generic: NotifyKindSpec = {
  kind: 'generic',
  limit: { bytes: GENERIC_BODY_MAX_BYTES, of: 'body' },
  build(alert, target) {
    const data = {
      tool: 'taskrecon',
      status: alert.status,
      recovered: alert.recovered,
      source: alert.source,
      now: alert.now,
      windowSeconds: alert.windowSeconds,
      title: alert.title,
      summary: alert.summary,
      breaches: alert.breaches,
      failing: alert.failing.map(capped),
    };
    const body = fitBody(plainText(alert), GENERIC_BODY_MAX_BYTES, (text) =>
      JSON.stringify({ ...data, text }),
    );
    return { url: target.url, headers: { 'content-type': 'application/json' }, body };
  },
  accepted(httpStatus) {
    return httpStatus >= 200 && httpStatus < 300 ? { ok: true } : { ok: false, error: `HTTP ${httpStatus}` };
  },
};
