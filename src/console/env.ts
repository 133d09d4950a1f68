/** What the console's middleware hands to its pages through Hono's context. */
export interface ConsoleEnv {
  Variables: {
    /** The CSRF token of the caller's session, put in every form. */
    csrf: string;
  };
}

/** Methods that never change anything; every other method is a state change. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);
