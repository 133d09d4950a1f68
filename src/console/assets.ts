import { readFileSync } from 'node:fs';

/**
 * The console's stylesheet and script, shipped in the package as plain files (no build step) and
 * read once. The path is the same from the sources and from the compiled `dist/console/`.
 */
const DIR = new URL('../../src/console/static/', import.meta.url);

export interface Asset {
  type: string;
  body: string;
}

const TYPES: Record<string, string> = {
  'console.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
};

let loaded: Map<string, Asset> | undefined;

export function asset(name: string): Asset | undefined {
  loaded ??= new Map(
    Object.entries(TYPES).map(([file, type]) => [
      file,
      { type, body: readFileSync(new URL(file, DIR), 'utf8') },
    ]),
  );
  return loaded.get(name);
}
