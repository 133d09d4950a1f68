import type { MiddlewareHandler } from 'hono';
import { SAFE_METHODS } from '../env.js';

/**
 * A state change must come from this console's own pages. Cookies do not tell ports apart (a page
 * on another loopback port is same-site and gets the SameSite=Strict cookie sent), so this check and
 * the CSRF token are what stop it:
 * - `Sec-Fetch-Site`, when sent, must be `same-origin` (a page on another port is `same-site`);
 * - `Origin`, when it names an origin, must be the one served. Under `Referrer-Policy: no-referrer`
 *   a browser sends `Origin: null` on a form post, so `null` counts as no Origin;
 * - with no usable Origin, `Sec-Fetch-Site: same-origin` is required: a request that proves neither
 *   (a script, curl) is refused.
 */
export function sameOriginGuard(origin: () => string): MiddlewareHandler {
  return async (c, next) => {
    if (!SAFE_METHODS.has(c.req.method)) {
      const fetchSite = c.req.header('sec-fetch-site');
      const sentOrigin = c.req.header('origin');
      if (fetchSite !== undefined && fetchSite !== 'same-origin')
        return c.text(`Refused: a ${fetchSite} request cannot change anything here.`, 403);
      const named = sentOrigin !== undefined && sentOrigin !== 'null';
      if (named ? sentOrigin !== origin() : fetchSite !== 'same-origin')
        return c.text('Refused: the request does not come from this console (Origin).', 403);
    }
    await next();
  };
}
