import { parseDuration } from '../core/duration.js';
import { resolveSecret } from '../config/secrets.js';
import { configError, usageError } from '../errors.js';
import { NOTIFY_KINDS, type NotifyKind, type NotifyTarget } from './types.js';

/** A webhook that has not answered in 5 s is not going to: the report must not wait on it. */
export const DEFAULT_NOTIFY_TIMEOUT_MS = 5000;

export interface ConfiguredTarget {
  kind: NotifyKind;
  url?: string;
  urlEnv?: string;
  urlFile?: string;
  secret?: string;
  secretEnv?: string;
  secretFile?: string;
  timeout?: string | number;
}

/** A configured target's URL and secret, from whichever form (inline, environment, file) is given. */
function targetSecrets(
  t: ConfiguredTarget,
  i: number,
  env: NodeJS.ProcessEnv,
): { url: string; secret: string | undefined } {
  const key = `report.notify[${i}]`;
  const url = resolveSecret(`${key}.url`, { inline: t.url, env: t.urlEnv, file: t.urlFile }, env);
  if (url === undefined)
    throw configError(`${key}: no url`, 'Give `url:`, `urlEnv: VARIABLE` or `urlFile: PATH`.');
  const secret = resolveSecret(
    `${key}.secret`,
    { inline: t.secret, env: t.secretEnv, file: t.secretFile },
    env,
  );
  return { url, secret };
}

function checkUrl(url: string, what: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError(
      `${what}: '${url}' is not a URL`,
      'Give the full webhook URL, e.g. https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…',
    );
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    throw usageError(`${what}: only http(s) webhooks are supported`);
  return url;
}

function checkedSecrets(t: ConfiguredTarget, i: number, env: NodeJS.ProcessEnv) {
  const { url, secret } = targetSecrets(t, i, env);
  return { url: checkUrl(url, `report.notify[${i}].url`), secret };
}

/**
 * The webhook targets of a run: config `report.notify` entries, plus `--webhook KIND=URL` flags
 * (their signing secret from TASKRECON_WEBHOOK_SECRET, so that it never appears in a process list).
 */
export function resolveTargets(
  configured: readonly ConfiguredTarget[],
  flags: readonly string[],
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): NotifyTarget[] {
  const env = options.env ?? process.env;
  const targets: NotifyTarget[] = configured.map((t, i) => ({
    kind: t.kind,
    ...checkedSecrets(t, i, env),
    timeoutMs:
      options.timeoutMs ??
      (t.timeout === undefined
        ? DEFAULT_NOTIFY_TIMEOUT_MS
        : parseDuration(t.timeout, `report.notify[${i}].timeout`)),
  }));
  for (const flag of flags) {
    const match = /^([a-z]+)=(.+)$/.exec(flag.trim());
    const kind = match?.[1] as NotifyKind | undefined;
    if (!match || !kind || !(NOTIFY_KINDS as readonly string[]).includes(kind)) {
      throw usageError(
        `--webhook: '${flag}' is not KIND=URL`,
        `KIND is one of ${NOTIFY_KINDS.join(', ')}, e.g. --webhook slack=https://hooks.slack.com/services/…`,
      );
    }
    targets.push({
      kind,
      url: checkUrl(match[2] as string, '--webhook'),
      secret: env.TASKRECON_WEBHOOK_SECRET || undefined,
      timeoutMs: options.timeoutMs ?? DEFAULT_NOTIFY_TIMEOUT_MS,
    });
  }
  return targets;
}
