/**
 * The JSON paths a field may be read through: `$` then keys (`.order_sn`) and array indexes
 * (`[0]`), e.g. `$.data.order_sn` or `$.items[0].sku`. Keys are plain names (letters, digits,
 * `_`), so a path is safe to write into SQL as a literal and means the same on every engine.
 */
export const SIMPLE_JSON_PATH = /^\$(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])+$/;

export function isSimpleJsonPath(path: string): boolean {
  return SIMPLE_JSON_PATH.test(path);
}

/** The value at a simple JSON path of a parsed document, or undefined when it is not there. */
export function valueAtPath(document: unknown, path: string): unknown {
  if (!isSimpleJsonPath(path)) return undefined;
  let value = document;
  for (const [, key, index] of path.slice(1).matchAll(/\.([A-Za-z0-9_]+)|\[(\d+)\]/g)) {
    if (value === null || typeof value !== 'object') return undefined;
    value =
      index !== undefined
        ? Array.isArray(value)
          ? (value as unknown[])[Number(index)]
          : undefined
        : (value as Record<string, unknown>)[key as string];
  }
  return value;
}
