import type { MiddlewareHandler } from 'hono';
import { SAFE_METHODS } from '../env.js';

/** `--read-only`: every request that could change something is refused before it is read. */
export function readOnlyGuard(): MiddlewareHandler {
  return async (c, next) => {
    if (!SAFE_METHODS.has(c.req.method)) {
      return c.text('This console runs with --read-only: no change is accepted.', 403);
    }
    await next();
  };
}
