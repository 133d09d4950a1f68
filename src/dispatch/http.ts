import type { Agent } from 'undici';
import { classifyError, classifyHttpStatus, describeFailure, parseRetryAfter } from '../core/classify.js';
import {
  taskMessage,
  type Dispatcher,
  type DispatchContext,
  type DispatchResult,
  type DispatchTask,
} from './types.js';

export interface HttpDispatcherOptions {
  url: string;
  timeoutMs: number;
  headers?: Record<string, string>;
  /** Connections kept open per origin (keep-alive pool). */
  connections?: number;
}

/** How much of an error response body goes into last_error. */
const BODY_SNIPPET_CHARS = 200;

/**
 * `http`: POST `{eventId, bizType, bizId, payload, attempt}` as JSON with `Idempotency-Key: <eventId>`
 * through an undici keep-alive pool. 2xx succeeds; the status and network classes of
 * src/core/classify.ts decide the rest; `Retry-After` is passed on. The timeout is the pool's connect,
 * headers and body-idle timeouts (undici's own timers: no per-request AbortSignal, which costs more
 * CPU than the request itself at thousands per second). undici is loaded on first use, so runs
 * without an http handler do not pay for it at start-up.
 */
export class HttpDispatcher implements Dispatcher {
  readonly kind = 'http';
  private undici: Promise<{ agent: Agent; request: typeof import('undici').request }> | undefined;

  readonly timeoutMs: number;

  constructor(private readonly options: HttpDispatcherOptions) {
    this.timeoutMs = options.timeoutMs;
  }

  private client() {
    this.undici ??= import('undici').then(({ Agent, request }) => ({
      request,
      agent: new Agent({
        connections: this.options.connections ?? 64,
        keepAliveTimeout: 30_000,
        connectTimeout: this.options.timeoutMs,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
      }),
    }));
    return this.undici;
  }

  async dispatch(task: DispatchTask, context: DispatchContext): Promise<DispatchResult> {
    let payload: unknown = null;
    if (task.payloadText !== null) {
      try {
        payload = JSON.parse(task.payloadText);
      } catch (error) {
        return { outcome: 'permanent', error: `bad payload: not valid JSON (${(error as Error).message})` };
      }
    }
    const body = taskMessage(task, payload);
    const { agent, request } = await this.client();
    try {
      const response = await request(this.options.url, {
        method: 'POST',
        dispatcher: agent,
        signal: context.signal,
        headers: {
          'content-type': 'application/json',
          ...(task.eventId !== null ? { 'idempotency-key': task.eventId } : {}),
          ...this.options.headers,
        },
        body,
      });
      const outcome = classifyHttpStatus(response.statusCode);
      if (outcome === 'success') {
        await response.body.dump();
        return { outcome };
      }
      const text = await response.body.text().catch(() => '');
      const retryAfterMs = parseRetryAfter(response.headers['retry-after'], Date.now());
      const snippet = text.replace(/\s+/g, ' ').trim().slice(0, BODY_SNIPPET_CHARS);
      return {
        outcome,
        error: `HTTP ${response.statusCode} from ${this.options.url}${snippet ? `: ${snippet}` : ''}`,
        ...(retryAfterMs !== undefined && outcome === 'retryable' ? { retryAfterMs } : {}),
      };
    } catch (error) {
      if (context.signal.aborted)
        return { outcome: 'retryable', error: 'stopped before the handler answered' };
      const timedOut = /^UND_ERR_(CONNECT|HEADERS|BODY)_TIMEOUT$/.test(
        (error as { code?: string }).code ?? '',
      );
      return {
        outcome: classifyError(error),
        error: timedOut
          ? `timeout after ${this.options.timeoutMs} ms from ${this.options.url}`
          : `${describeFailure(error)} (${this.options.url})`,
      };
    }
  }

  async close(): Promise<void> {
    if (this.undici) await (await this.undici).agent.close();
  }
}
