/**
 * The codebase writes `?` placeholders (MySQL's and SQLite's); PostgreSQL numbers them (`$1…$n`).
 * The statements are taskrecon's own, so a scan that knows the places a `?` is not a placeholder
 * is enough: inside a quoted literal ('…', E'…'), a quoted identifier ("…"), a dollar-quoted
 * string ($tag$…$tag$) or a comment (-- …, /* … *\/).
 */
export function numberPlaceholders(sql: string): string {
  if (!sql.includes('?')) return sql;
  return scan(sql).text;
}

/**
 * The unquoted column aliases of a statement that hold capitals (`AS bizType`), by the lower-case
 * name PostgreSQL gives them (it folds unquoted identifiers; MySQL keeps their case), or null when
 * there are none. The code reads result rows by the alias as written.
 */
export function foldedAliases(sql: string): Map<string, string> | null {
  return scan(sql).aliases;
}

/** Both answers of one pass over a statement, kept for the statements run again and again. */
const scanned = new Map<string, { text: string; aliases: Map<string, string> | null }>();
const SCANNED_MAX = 500;

function scan(sql: string): { text: string; aliases: Map<string, string> | null } {
  const known = scanned.get(sql);
  if (known) return known;
  const result = scanOnce(sql);
  if (scanned.size >= SCANNED_MAX) scanned.clear();
  scanned.set(sql, result);
  return result;
}

/**
 * The statement with each `?` placeholder replaced by `literal(params[n])`, for the protocol that
 * takes no parameters (COPY runs as a simple query). Quoted text and comments are left alone, as
 * numberPlaceholders() leaves them.
 */
export function inlinePlaceholders(
  sql: string,
  params: readonly unknown[],
  literal: (value: unknown) => string,
): string {
  if (!sql.includes('?')) return sql;
  return scanOnce(sql, (n) => {
    if (n > params.length)
      throw new Error(`statement has more placeholders than its ${params.length} parameters`);
    return literal(params[n - 1]);
  }).text;
}

const ALIAS = /^AS\s+([A-Za-z_][A-Za-z0-9_$]*)/i;

function scanOnce(
  sql: string,
  placeholder: (n: number) => string = (n) => `$${n}`,
): { text: string; aliases: Map<string, string> | null } {
  let aliases: Map<string, string> | null = null;
  let out = '';
  let n = 0;
  let i = 0;
  const length = sql.length;
  while (i < length) {
    const c = sql[i] as string;
    if (c === '?') {
      out += placeholder(++n);
      i++;
      continue;
    }
    let end = i + 1;
    if ((c === 'A' || c === 'a') && !/[A-Za-z0-9_$]/.test(sql[i - 1] ?? ' ')) {
      const alias = ALIAS.exec(sql.slice(i, i + 80))?.[1];
      if (alias && alias !== alias.toLowerCase()) {
        aliases ??= new Map();
        aliases.set(alias.toLowerCase(), alias);
      }
    }
    if (c === "'" || c === '"') {
      // A doubled quote is the quote itself; a backslash escapes only in E'' strings.
      const escapes = c === "'" && i > 0 && /[eE]/.test(sql[i - 1] as string);
      while (end < length) {
        const d = sql[end] as string;
        if (escapes && d === '\\') end += 2;
        else if (d === c && sql[end + 1] === c) end += 2;
        else if (d === c) {
          end++;
          break;
        } else end++;
      }
    } else if (c === '-' && sql[i + 1] === '-') {
      const newline = sql.indexOf('\n', i);
      end = newline === -1 ? length : newline;
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      end = close === -1 ? length : close + 2;
    } else if (c === '$') {
      const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        end = close === -1 ? length : close + tag[0].length;
      }
    }
    out += sql.slice(i, Math.min(end, length));
    i = end;
  }
  return { text: out, aliases };
}
