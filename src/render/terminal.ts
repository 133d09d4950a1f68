import chalk from 'chalk';

/**
 * Colour and TTY decisions in one place. chalk 5 ignores NO_COLOR, so it is handled here:
 * colour only when stdout is a TTY, NO_COLOR is unset and --no-color was not given.
 */
export function configureColor(colorFlag: boolean): void {
  const noColorEnv = process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '';
  if (!colorFlag || noColorEnv || !process.stdout.isTTY) chalk.level = 0;
}

export const isStdoutTty = (): boolean => Boolean(process.stdout.isTTY);
export const isStderrTty = (): boolean => Boolean(process.stderr.isTTY);

/** Writes to stdout, waiting for the pipe to drain when it is full (large streams stay flat in memory). */
export function writeOut(text: string | Uint8Array): Promise<void> | void {
  if (!process.stdout.write(text)) {
    return new Promise((resolve) => process.stdout.once('drain', () => resolve()));
  }
}

export function writeErr(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Control characters (but tab and newline) as visible escapes, so a binary value cannot garble a terminal. */
export function printable(text: string, maxChars?: number): string {
  // eslint-disable-next-line no-control-regex
  const controls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
  const clean = text.replace(controls, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  if (maxChars === undefined || clean.length <= maxChars) return clean;
  return `${clean.slice(0, maxChars - 1)}…`;
}

/** One line of an error message for a table cell. */
export function oneLine(text: string | null, maxChars: number): string {
  if (text === null) return '';
  return printable(text.replace(/\s*\n\s*/g, ' ⏎ '), maxChars);
}

export { chalk };
