import type { MiddlewareHandler } from 'hono';
import { SAFE_METHODS } from '../env.js';

/**
 * A state change must come from this console's own pages: `Origin` equal to the origin served, and
 * `Sec-Fetch-Site`, when the browser sends it, `same-origin`. Cookies do not tell ports apart (a
 * page on another loopback port is same-site and gets the SameSite=Strict cookie sent), so this
 * check and the CSRF token are what stop it. A request without `Origin` is refused: every browser
 * sends it on a POST, and a script can send it too.
 */
export function sameOriginGuard(origin: () => string): MiddlewareHandler {
  return async (c, next) => {
    if (!SAFE_METHODS.has(c.req.method)) {
      const fetchSite = c.req.header('sec-fetch-site');
      if (fetchSite !== undefined && fetchSite !== 'same-origin')
        return c.text(`Refused: a ${fetchSite} request cannot change anything here.`, 403);
      if (c.req.header('origin') !== origin())
        return c.text('Refused: the request does not come from this console (Origin).', 403);
    }
    await next();
  };
}
