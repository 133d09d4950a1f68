/**
 * Where a shard's console is served: `/shards/<name>/…`, the name percent-encoded (every character
 * but letters, digits and `-_.~`), so a shard named with `/`, `<` or quotes stays one path segment
 * and safe inside a quoted attribute.
 */
export function shardPrefix(name: string): string {
  return `/shards/${encodeURIComponent(name).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** `/shards/<name>/rest?query` → the shard's name and the path within its console; undefined when the path names no shard. */
export function splitShardPath(pathname: string): { name: string; rest: string } | undefined {
  const m = /^\/shards\/([^/]+)(\/.*)?$/.exec(pathname);
  if (!m) return undefined;
  try {
    return { name: decodeURIComponent(m[1] as string), rest: m[2] ?? '/' };
  } catch {
    return undefined;
  }
}

/** Paths every console shares, served at the top: the stylesheet and the script. */
const SHARED = /^\/static\//;

/** A local path of a shard's console (`/tasks/7`), as the browser must ask for it (`/shards/<name>/tasks/7`). */
export function scopePath(path: string, prefix: string): string {
  if (!path.startsWith('/') || path.startsWith('//') || SHARED.test(path)) return path;
  return `${prefix}${path}`;
}

/** The attribute that marks a link out of the shard (to the merged overview): left as written. */
export const UNSCOPED = 'data-unscoped';
/** `data-unscoped` as an attribute of a tag (its quoted values blanked first: a value never counts). */
const UNSCOPED_ATTRIBUTE = /\sdata-unscoped(?=[\s/>=])/;

/**
 * Puts every link and form of a shard's page under its prefix. The console's markup is built by the
 * `html` template alone, which escapes every value (`"` included), so an `href="/` or `action="/`
 * can only be an attribute the console itself wrote, never text of a task. A tag carrying
 * `data-unscoped` (the link to the merged overview) and `/static/` paths are left as they are.
 */
export function scopeLinks(page: string, prefix: string): string {
  return page.replace(/<[a-zA-Z][^>]*>/g, (tag) =>
    UNSCOPED_ATTRIBUTE.test(tag.replace(/"[^"]*"/g, '""'))
      ? tag
      : tag.replace(
          /(\s(?:href|action)=")(\/[^"]*)"/g,
          (_all, head: string, path: string) => `${head}${scopePath(path, prefix)}"`,
        ),
  );
}
