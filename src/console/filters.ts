import type { TaskId } from '../core/task.js';
import { parseDuration } from '../core/duration.js';
import { usageError } from '../errors.js';
import type { ListCursor, ListFilter } from '../verbs/scan/index.js';

/** The lists the console pages through, as `scan` names them. */
export const LIST_KINDS = ['failed', 'stuck', 'due'] as const;
export type ConsoleList = (typeof LIST_KINDS)[number];

/** A list's filters, as the list page's form sends them (the scan filters plus error and payload text). */
export interface ListQuery {
  list: ConsoleList;
  bizTypes: string[];
  error: string;
  payload: string;
  /** As typed: an ISO date-time or a duration ago (`24h`). */
  since: string;
  until: string;
}

/** Rows per page. */
export const PAGE_SIZE = 50;

export function parseListQuery(params: URLSearchParams | Record<string, unknown>): ListQuery {
  const get = (name: string): string => {
    const v = params instanceof URLSearchParams ? params.get(name) : params[name];
    return typeof v === 'string' ? v.trim() : '';
  };
  const list = get('list');
  return {
    list: (LIST_KINDS as readonly string[]).includes(list) ? (list as ConsoleList) : 'failed',
    bizTypes: get('biz')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    error: get('error'),
    payload: get('payload'),
    since: get('since'),
    until: get('until'),
  };
}

/** The query as URL parameters (links to pages of the same list). */
export function queryParams(query: ListQuery): URLSearchParams {
  const p = new URLSearchParams({ list: query.list });
  if (query.bizTypes.length) p.set('biz', query.bizTypes.join(','));
  for (const key of ['error', 'payload', 'since', 'until'] as const) if (query[key]) p.set(key, query[key]);
  return p;
}

/** An ISO date-time or a duration ago, as epoch seconds; undefined when empty. */
export function parseWhen(text: string, nowEpoch: number, name: string): number | undefined {
  if (text === '') return undefined;
  if (/^\d+(?:\.\d+)?\s*(ms|s|m|min|h|d)$/.test(text))
    return nowEpoch - Math.round(parseDuration(text, name) / 1000);
  const ms = Date.parse(text);
  if (Number.isNaN(ms))
    throw usageError(
      `${name}: '${text}' is neither a date-time nor a duration`,
      'Use e.g. 2026-11-29T08:00:00Z, or 2h.',
    );
  return Math.floor(ms / 1000);
}

/** The list a query asks for, as of `nowEpoch` (the scan verb builds its predicate). */
export function listFilter(query: ListQuery, nowEpoch: number, stuckAfterMs: number): ListFilter {
  return {
    list: query.list,
    nowEpoch,
    stuckAfterMs,
    bizTypes: query.bizTypes,
    sinceEpoch: parseWhen(query.since, nowEpoch, 'since'),
    untilEpoch: parseWhen(query.until, nowEpoch, 'until'),
    errorText: query.error,
    payloadText: query.payload,
  };
}

export function encodeCursor(cursor: ListCursor): string {
  return Buffer.from(JSON.stringify([cursor.nrt, cursor.id])).toString('base64url');
}

/** The longest `after` a page link carries (a page key and an id, base64url). */
const MAX_CURSOR = 512;

/**
 * A cursor from a page link: the base64url JSON `[page key, id]` encodeCursor wrote, the key null,
 * a number or text, the id a number or text. Anything else is refused (a usage error: a 400), never
 * read as the first page; whether the key and id fit the table is checked when the page is read.
 */
export function decodeCursor(text: string | undefined): ListCursor | undefined {
  if (text === undefined || text === '') return undefined;
  const bad = () =>
    usageError(
      `after: '${text.length > 40 ? `${text.slice(0, 40)}…` : text}' is not a page link's position`,
      "Follow the list's Next link, or open the list without 'after' for its first page.",
    );
  if (text.length > MAX_CURSOR || !/^[A-Za-z0-9_-]+$/.test(text)) throw bad();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(value) || value.length !== 2) throw bad();
  const [nrt, id] = value as [unknown, unknown];
  if (nrt !== null && typeof nrt !== 'number' && typeof nrt !== 'string') throw bad();
  if (typeof nrt === 'number' && !Number.isFinite(nrt)) throw bad();
  if (typeof id !== 'number' && typeof id !== 'string') throw bad();
  if (typeof id === 'number' && !Number.isSafeInteger(id)) throw bad();
  if (encodeCursor({ nrt, id }) !== text) throw bad();
  return { nrt, id: id as TaskId };
}
