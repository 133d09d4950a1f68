import type { MiddlewareHandler } from 'hono';
import { SAFE_METHODS, type ConsoleEnv } from '../env.js';
import { sameSecret } from './secret.js';

/** The form field every state-changing form carries. */
export const CSRF_FIELD = '_csrf';

/**
 * Every state change carries the session's CSRF token in its form body (runs after the session
 * guard, which sets `csrf`). A stale token, one of an earlier session, or none: refused, nothing read further.
 */
export function csrfGuard(): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    if (!SAFE_METHODS.has(c.req.method)) {
      const type = c.req.header('content-type') ?? '';
      const form =
        type.startsWith('application/x-www-form-urlencoded') || type.startsWith('multipart/form-data')
          ? await c.req.parseBody()
          : {};
      const sent = form[CSRF_FIELD];
      if (typeof sent !== 'string' || !sameSecret(sent, c.get('csrf')))
        return c.text(
          'Refused: the form is stale or not from this session (CSRF token). Reload the page.',
          403,
        );
    }
    await next();
  };
}
