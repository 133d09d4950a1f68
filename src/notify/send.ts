import type { NotifyKindSpec, OutboundRequest } from './types.js';

export interface SendOutcome {
  ok: boolean;
  httpStatus: number | null;
  error: string | null;
  bytes: number;
}

/**
 * POSTs one message with a hard timeout covering connect, headers and body: a webhook that never
 * answers is abandoned after `timeoutMs` and reported as failed, never waited on.
 */
export async function sendWebhook(
  spec: NotifyKindSpec,
  request: OutboundRequest,
  timeoutMs: number,
): Promise<SendOutcome> {
  const bytes = Buffer.byteLength(request.body, 'utf8');
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    const response = await fetch(request.url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      signal: controller.signal,
    });
    const text = await response.text();
    const verdict = spec.accepted(response.status, text);
    return {
      ok: verdict.ok,
      httpStatus: response.status,
      error: verdict.ok ? null : (verdict.error ?? 'rejected'),
      bytes,
    };
  } catch (error) {
    return { ok: false, httpStatus: null, error: describe(error, controller.signal), bytes };
  } finally {
    clearTimeout(timer);
  }
}

function describe(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return signal.reason instanceof Error ? signal.reason.message : 'timed out';
  const e = error as Error & { cause?: { code?: string; message?: string } };
  if (e.cause?.code) return `${e.cause.code}: ${e.cause.message ?? e.message}`;
  return e.cause?.message ? `${e.message}: ${e.cause.message}` : e.message;
}
