import { slackText } from './alert.js';
import { fitText } from './fit.js';
import type { NotifyKindSpec } from './types.js';

/** Slack incoming webhook: mrkdwn `text`; Slack truncates text past 40,000 characters, so it is cut first. */
export const SLACK_TEXT_MAX_CHARS = 40_000;

export const slack: NotifyKindSpec = {
  kind: 'slack',
  limit: { chars: SLACK_TEXT_MAX_CHARS, of: 'text' },
  build(alert, target) {
    const text = fitText(slackText(alert), SLACK_TEXT_MAX_CHARS, (s) => s.length);
    return {
      url: target.url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    };
  },
  accepted(httpStatus, body) {
    // Slack answers 200 "ok", or 4xx with a reason such as "invalid_payload".
    return httpStatus >= 200 && httpStatus < 300
      ? { ok: true }
      : { ok: false, error: `HTTP ${httpStatus}: ${body.slice(0, 100)}` };
  },
};
