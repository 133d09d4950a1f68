import type { MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import type { ConsoleEnv } from '../env.js';
import { newSecret, sameSecret } from './secret.js';

/** Paths served without a session: the stylesheet and script, which hold no data. */
const PUBLIC_PREFIX = '/static/';

/** How long a link minted for a running console (`console --link`) can be used. */
export const MINTED_LINK_MS = 10 * 60_000;

/**
 * The console's sessions. The URL printed at start-up carries a one-time token; the first request
 * with it gets a session cookie (HttpOnly, SameSite=Strict) and a redirect that drops the token from
 * the address bar and history. A token works once: a copied URL opens nothing afterwards.
 * `console --link` mints another one-time token (valid 10 minutes) for another browser; the
 * sessions already signed in stay signed in.
 */
export class Sessions {
  private token: string | undefined = newSecret();
  /** Minted tokens and when each stops working (epoch ms). */
  private readonly minted = new Map<string, number>();
  private readonly csrfBySession = new Map<string, string>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The one-time start-up token (undefined once used). */
  get startToken(): string | undefined {
    return this.token;
  }

  /** A fresh one-time token for one more browser. */
  mint(): string {
    const token = newSecret();
    this.minted.set(token, this.now() + MINTED_LINK_MS);
    return token;
  }

  /** Spends a one-time token: a new session id, or undefined when the token is wrong, spent or expired. */
  exchange(token: string): string | undefined {
    if (this.token !== undefined && sameSecret(token, this.token)) this.token = undefined;
    else if (!this.spendMinted(token)) return undefined;
    const id = newSecret();
    this.csrfBySession.set(id, newSecret());
    return id;
  }

  private spendMinted(token: string): boolean {
    const now = this.now();
    let found = false;
    for (const [minted, until] of this.minted) {
      if (until <= now) this.minted.delete(minted);
      else if (!found && sameSecret(token, minted)) {
        this.minted.delete(minted);
        found = true;
      }
    }
    return found;
  }

  csrfOf(sessionId: string): string | undefined {
    for (const [id, csrf] of this.csrfBySession) if (sameSecret(id, sessionId)) return csrf;
    return undefined;
  }
}

/** Checks the session cookie on every page; swaps the one-time token for the cookie. */
export function sessionGuard(sessions: Sessions, cookieName: () => string): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    if (c.req.path.startsWith(PUBLIC_PREFIX)) return next();
    const url = new URL(c.req.url);
    const token = url.searchParams.get('token');
    const cookie = getCookie(c, cookieName());
    const signedIn = cookie !== undefined && sessions.csrfOf(cookie) !== undefined;
    if (token !== null) {
      // The URL opened again in the browser that spent it: already signed in, drop the token.
      if (signedIn) {
        url.searchParams.delete('token');
        return c.redirect(`${url.pathname}${url.search}`, 303);
      }
      const id = sessions.exchange(token);
      if (!id)
        return c.text(
          'This link was used already, has expired or is not valid. Run `taskrecon console --link` for a new one.',
          403,
        );
      setCookie(c, cookieName(), id, { httpOnly: true, sameSite: 'Strict', path: '/' });
      url.searchParams.delete('token');
      c.header('Cache-Control', 'no-store');
      return c.redirect(`${url.pathname}${url.search}`, 303);
    }
    const csrf = cookie === undefined ? undefined : sessions.csrfOf(cookie);
    if (csrf === undefined)
      return c.text('Not signed in: open the URL `taskrecon console` printed when it started.', 401);
    c.set('csrf', csrf);
    await next();
  };
}
