import chalk from 'chalk';

/**
 * Colour and TTY decisions in one place. chalk 5 ignores NO_COLOR, so it is handled here:
 * `--no-color` or NO_COLOR: none; `--color` given, or FORCE_COLOR set: colour even when piped
 * (e.g. into `less -R`); otherwise colour only when stdout is a TTY.
 */
export function configureColor(colorFlag: boolean | undefined): void {
  const noColorEnv = process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '';
  const force = process.env.FORCE_COLOR;
  const forced =
    colorFlag === true || (force !== undefined && force !== '' && force !== '0' && force !== 'false');
  if (colorFlag === false || noColorEnv) chalk.level = 0;
  else if (forced) chalk.level = Math.max(chalk.level, 1) as typeof chalk.level;
  else if (!process.stdout.isTTY) chalk.level = 0;
}

let wide = false;

/** `--wide`: table cells and messages in full, however wide the terminal. */
export function setWideOutput(value: boolean): void {
  wide = value;
}

/** Whether values are shown in full: `--wide`, or stdout is not a terminal (a program reads it). */
export function fullValues(): boolean {
  return wide || !process.stdout.isTTY;
}

/** The width a table may take: the terminal's, or unlimited with --wide or when piped. */
export function tableWidth(): number {
  return fullValues() ? Number.POSITIVE_INFINITY : process.stdout.columns || 80;
}

export const isStdoutTty = (): boolean => Boolean(process.stdout.isTTY);
export const isStderrTty = (): boolean => Boolean(process.stderr.isTTY);

/**
 * Writes to stdout, waiting for the pipe to drain when it is full (large streams stay flat in
 * memory). `written` is called once the bytes are handed to the system (the buffer may be reused).
 */
export function writeOut(text: string | Uint8Array, written?: () => void): Promise<void> | void {
  if (!process.stdout.write(text, written && (() => written()))) {
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
  if (maxChars === undefined || clean.length <= maxChars || fullValues()) return clean;
  return `${clean.slice(0, maxChars - 1)}…`;
}

/** One line of an error message for a table cell. */
export function oneLine(text: string | null, maxChars: number): string {
  if (text === null) return '';
  // Piped: the value in full with its newlines, which the table escapes as \n.
  if (!process.stdout.isTTY) return printable(text);
  return printable(text.replace(/\s*\n\s*/g, ' ⏎ '), maxChars);
}

export { chalk };
