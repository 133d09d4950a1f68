import { createHmac } from 'node:crypto';

/**
 * DingTalk custom robot signing: HmacSHA256 keyed with the secret over `timestamp + "\n" + secret`,
 * Base64, then URL-encoded; sent as the `timestamp` (milliseconds) and `sign` query parameters.
 */
export function dingtalkSign(timestampMs: number, secret: string): string {
  const digest = createHmac('sha256', secret).update(`${timestampMs}\n${secret}`, 'utf8').digest('base64');
  return encodeURIComponent(digest);
}

/**
 * Feishu (Lark) custom bot signing: HmacSHA256 keyed with `timestamp + "\n" + secret` over an empty
 * message, Base64; sent in the body as `timestamp` (seconds, a string) and `sign`.
 */
export function feishuSign(timestampSeconds: number, secret: string): string {
  return createHmac('sha256', `${timestampSeconds}\n${secret}`).update('').digest('base64');
}
