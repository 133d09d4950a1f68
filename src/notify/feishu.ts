import { plainText } from './alert.js';
import { fitBody } from './fit.js';
import { feishuSign } from './sign.js';
import type { NotifyKindSpec } from './types.js';

/** Feishu (飞书) custom bot: a text message; the request body may be at most 20 KB. */
export const FEISHU_BODY_MAX_BYTES = 20_000;

export const feishu: NotifyKindSpec = {
  kind: 'feishu',
  limit: { bytes: FEISHU_BODY_MAX_BYTES, of: 'body' },
  build(alert, target, nowMs) {
    const timestamp = Math.floor(nowMs / 1000);
    const signed = target.secret
      ? { timestamp: String(timestamp), sign: feishuSign(timestamp, target.secret) }
      : {};
    const body = fitBody(plainText(alert), FEISHU_BODY_MAX_BYTES, (text) =>
      JSON.stringify({ ...signed, msg_type: 'text', content: { text } }),
    );
    return { url: target.url, headers: { 'content-type': 'application/json' }, body };
  },
  accepted(httpStatus, body) {
    if (httpStatus < 200 || httpStatus >= 300) return { ok: false, error: `HTTP ${httpStatus}` };
    try {
      // Feishu answers {"code":0,"msg":"success"} (older bots: {"StatusCode":0}).
      const parsed = JSON.parse(body) as { code?: unknown; StatusCode?: unknown; msg?: unknown };
      const code = parsed.code ?? parsed.StatusCode;
      if (code === 0 || code === undefined) return { ok: true };
      return { ok: false, error: `code ${String(code)}: ${String(parsed.msg ?? '')}` };
    } catch {
      return { ok: true };
    }
  },
};
