import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);

/** Validates a command's --json output against schemas/<command>.schema.json; throws with every error. */
export function assertMatchesSchema(command: string, value: unknown): void {
  const path = fileURLToPath(new URL(`../../schemas/${command}.schema.json`, import.meta.url));
  const schema = JSON.parse(readFileSync(path, 'utf8')) as object;
  const validate = ajv.getSchema(path) ?? (ajv.addSchema(schema, path), ajv.getSchema(path));
  if (!validate) throw new Error(`cannot compile ${path}`);
  if (!validate(value))
    throw new Error(
      `${command} output does not match its schema:\n${ajv.errorsText(validate.errors, { separator: '\n' })}`,
    );
}
