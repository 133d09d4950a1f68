import { markdownText } from './alert.js';
import { fitText, utf8Bytes } from './fit.js';
import type { NotifyKindSpec } from './types.js';

/** WeCom (企业微信) group robot: a markdown message whose content may be at most 4096 bytes of UTF-8. */
export const WECOM_CONTENT_MAX_BYTES = 4096;

export const wecom: NotifyKindSpec = {
  kind: 'wecom',
  limit: { bytes: WECOM_CONTENT_MAX_BYTES, of: 'content' },
  build(alert, target) {
    const content = fitText(markdownText(alert), WECOM_CONTENT_MAX_BYTES, utf8Bytes);
    return {
      url: target.url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ msgtype: 'markdown', markdown: { content } }),
    };
  },
  accepted: errcodeAccepted,
};

/** WeCom and DingTalk answer HTTP 200 with `{"errcode":0,"errmsg":"ok"}`, or another errcode on failure. */
export function errcodeAccepted(httpStatus: number, body: string): { ok: boolean; error?: string } {
  if (httpStatus < 200 || httpStatus >= 300) return { ok: false, error: `HTTP ${httpStatus}` };
  try {
    const parsed = JSON.parse(body) as { errcode?: unknown; errmsg?: unknown };
    if (parsed.errcode === 0 || parsed.errcode === undefined) return { ok: true };
    return { ok: false, error: `errcode ${String(parsed.errcode)}: ${String(parsed.errmsg ?? '')}` };
  } catch {
    return { ok: true };
  }
}
