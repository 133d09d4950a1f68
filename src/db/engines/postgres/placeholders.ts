/**
 * The codebase writes `?` placeholders (MySQL's and SQLite's); PostgreSQL numbers them (`$1…$n`).
 * The statements are taskrecon's own, so a scan that knows the places a `?` is not a placeholder
 * is enough: inside a quoted literal ('…', E'…'), a quoted identifier ("…"), a dollar-quoted
 * string ($tag$…$tag$) or a comment (-- …, /* … *\/).
 */
export function numberPlaceholders(sql: string): string {
  if (!sql.includes('?')) return sql;
  let out = '';
  let n = 0;
  let i = 0;
  const length = sql.length;
  while (i < length) {
    const c = sql[i] as string;
    if (c === '?') {
      out += `$${++n}`;
      i++;
      continue;
    }
    let end = i + 1;
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
  return out;
}
