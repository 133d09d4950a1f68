import { maskDsnText } from '../db/dsn.js';
import { TaskreconError } from '../errors.js';

/** An error as `report` and `doctor` show a broker they could not inspect: message and hint, password masked. */
export function errorText(error: unknown): { message: string; hint: string | null } {
  const message = maskDsnText(error instanceof Error ? error.message : String(error));
  const hint = error instanceof TaskreconError && error.hint ? maskDsnText(error.hint) : null;
  return { message, hint };
}
