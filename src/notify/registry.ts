import { createHash } from 'node:crypto';
import { dingtalk } from './dingtalk.js';
import { feishu } from './feishu.js';
import { generic } from './generic.js';
import { slack } from './slack.js';
import type { NotifyKind, NotifyKindSpec } from './types.js';
import { wecom } from './wecom.js';

export const NOTIFY_SPECS: Record<NotifyKind, NotifyKindSpec> = { wecom, dingtalk, feishu, slack, generic };

/** A webhook URL for display: query values and token-like path segments masked (webhook URLs carry their credentials). */
export function maskWebhookUrl(url: string): string {
  try {
    const u = new URL(url);
    const path = u.pathname
      .split('/')
      .map((segment) => (/^[A-Za-z0-9_-]{16,}$/.test(segment) ? '***' : segment))
      .join('/');
    const query = [...u.searchParams.keys()].map((k) => `${k}=***`).join('&');
    return `${u.protocol}//${u.host}${path}${query ? `?${query}` : ''}`;
  } catch {
    return '(invalid URL)';
  }
}

/** A stable key for the cooldown state of one target, without storing its URL (which holds a token). */
export function targetKey(kind: NotifyKind, url: string): string {
  return `${kind}:${createHash('sha256').update(url).digest('hex').slice(0, 16)}`;
}
