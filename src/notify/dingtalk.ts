import { markdownText } from './alert.js';
import { fitBody } from './fit.js';
import { dingtalkSign } from './sign.js';
import type { NotifyKindSpec } from './types.js';
import { errcodeAccepted } from './wecom.js';

/** DingTalk (钉钉) custom robot: a markdown message; the request body is kept within 20000 bytes. */
export const DINGTALK_BODY_MAX_BYTES = 20_000;

export const dingtalk: NotifyKindSpec = {
  kind: 'dingtalk',
  limit: { bytes: DINGTALK_BODY_MAX_BYTES, of: 'body' },
  build(alert, target, nowMs) {
    let url = target.url;
    if (target.secret) {
      const timestamp = Math.round(nowMs);
      url += `${url.includes('?') ? '&' : '?'}timestamp=${timestamp}&sign=${dingtalkSign(timestamp, target.secret)}`;
    }
    const title = alert.title.length > 64 ? `${alert.title.slice(0, 63)}…` : alert.title;
    const body = fitBody(markdownText(alert), DINGTALK_BODY_MAX_BYTES, (text) =>
      JSON.stringify({ msgtype: 'markdown', markdown: { title, text } }),
    );
    return { url, headers: { 'content-type': 'application/json' }, body };
  },
  accepted: errcodeAccepted,
};
