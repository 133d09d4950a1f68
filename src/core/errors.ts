/**
 * Exit codes shared by every command. The README documents them.
 */
export const ExitCode = {
  ok: 0,
  /** Findings: diff inconsistencies, a failed drill, a report WARNING, doctor failures. */
  findings: 1,
  /** Report CRITICAL. */
  critical: 2,
  /** Could not run: usage, config, connection, permission (Nagios UNKNOWN). */
  couldNotRun: 3,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

export interface TaskreconErrorOptions {
  /** A stable machine-readable code, e.g. `CONFIG_INVALID`. */
  code?: string;
  /** What the user can do about it. */
  hint?: string;
  exit?: ExitCodeValue;
  cause?: unknown;
}

/** An error the user can act on: it carries its exit code and a hint, and never a stack trace to the terminal. */
export class TaskreconError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly exit: ExitCodeValue;

  constructor(message: string, options: TaskreconErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TaskreconError';
    this.code = options.code ?? 'COULD_NOT_RUN';
    this.hint = options.hint;
    this.exit = options.exit ?? ExitCode.couldNotRun;
  }
}

/** Bad input from flags, arguments or config: exit 3, nothing written. */
export function usageError(message: string, hint?: string): TaskreconError {
  return new TaskreconError(message, { code: 'USAGE', hint, exit: ExitCode.couldNotRun });
}

export function configError(message: string, hint?: string): TaskreconError {
  return new TaskreconError(message, { code: 'CONFIG_INVALID', hint, exit: ExitCode.couldNotRun });
}
