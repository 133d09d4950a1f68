import { request } from 'undici';
import { startFaultServer, type FaultServer } from './fault-server.js';

/**
 * Faults in front of a real (staging) handler: a loopback server that forwards each delivery to
 * `upstream` unless the drill has switched a fault on. The staging handler itself is never
 * changed; `slow` forwards (the effect happens) and then holds the answer past the caller's timeout.
 * `bizType` is what the handler is told (drill rows carry a biz type of their own, see DrillEnv).
 */
export async function startFaultProxy(
  upstream: string,
  options: { slowMs?: number; upstreamTimeoutMs?: number; bizType?: string } = {},
): Promise<FaultServer> {
  const timeout = options.upstreamTimeoutMs ?? 30_000;
  return startFaultServer(async (delivery) => {
    const response = await request(upstream, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': delivery.idempotencyKey ?? delivery.eventId,
      },
      body: JSON.stringify({
        eventId: delivery.eventId,
        bizType: options.bizType ?? delivery.bizType,
        bizId: delivery.bizId,
        payload: delivery.payload,
        attempt: delivery.attempt,
      }),
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    const text = await response.body.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: passed on as text
    }
    return { status: response.statusCode, body };
  }, options);
}
