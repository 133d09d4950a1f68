import type { Context } from 'hono';
import { maskDsnText } from '../db/dsn.js';
import { TaskreconError } from '../errors.js';
import { html } from './html.js';

/**
 * The error page: the message and hint an operator can act on (masked like every CLI error), never
 * a stack trace or a DSN. Bad input (exit 3 errors) is a 400, anything unexpected a 500.
 */
/** An error as the console may show it: the masked message and hint of a TaskreconError; anything else is internal. */
export function describeForPage(error: unknown): { code: string; message: string; hint: string | undefined } {
  if (error instanceof TaskreconError)
    return {
      code: error.code,
      message: maskDsnText(error.message),
      hint: error.hint && maskDsnText(error.hint),
    };
  return {
    code: 'INTERNAL',
    message: maskDsnText((error as Error)?.message ?? String(error)),
    hint: undefined,
  };
}

export function errorPage(c: Context, error: unknown): Response {
  const described = describeForPage(error);
  const internal = described.code === 'INTERNAL';
  if (internal) process.stderr.write(`console: ${described.message}\n`);
  const status = described.code === 'NOT_FOUND' ? 404 : internal ? 500 : 400;
  const body = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>Error · taskrecon console</title>
        <link rel="stylesheet" href="/static/console.css" />
      </head>
      <body>
        <main>
          <h1>${internal ? 'Something went wrong' : 'Cannot do that'}</h1>
          <p class="flash error" id="error-message">
            ${internal ? 'The console hit an unexpected error; its terminal shows the message.' : described.message}
          </p>
          ${!internal && described.hint ? html`<p class="muted">${described.hint}</p>` : ''}
          <p><a href="/">Back to the overview</a></p>
        </main>
      </body>
    </html>`;
  return c.html(body.text, status);
}

export function notFoundPage(c: Context): Response {
  return c.html(
    html`<!doctype html>
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <title>Not found · taskrecon console</title>
          <link rel="stylesheet" href="/static/console.css" />
        </head>
        <body>
          <main>
            <h1>Not found</h1>
            <p><a href="/">Back to the overview</a></p>
          </main>
        </body>
      </html>`.text,
    404,
  );
}
