import type { MiddlewareHandler } from 'hono';

/**
 * DNS rebinding: a page of evil.example whose name is made to resolve to 127.0.0.1 reaches this
 * server with `Host: evil.example:PORT`. Only the exact loopback address and port served are answered.
 * `allowed` is read per request because the port is known only once the server listens (port 0).
 */
export function hostGuard(allowed: () => readonly string[]): MiddlewareHandler {
  return async (c, next) => {
    const host = (c.req.header('host') ?? '').toLowerCase();
    if (!allowed().includes(host)) {
      return c.text(
        'This console answers only on the address it printed at start-up (Host header refused).',
        421,
      );
    }
    await next();
  };
}
