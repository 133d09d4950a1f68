import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

/** The shipped monitoring files, and what reads the metric names out of them. */
export const RULES_FILE = fileURLToPath(
  new URL('../../contrib/prometheus/taskrecon.rules.yml', import.meta.url),
);
export const RULES_TEST_FILE = fileURLToPath(
  new URL('../../contrib/prometheus/taskrecon.rules.test.yml', import.meta.url),
);
export const DASHBOARD_FILE = fileURLToPath(new URL('../../contrib/grafana/taskrecon.json', import.meta.url));

// Words of PromQL that are not metric names (aggregation modifiers, set operators, literals).
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'atan2',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression (or a Grafana `label_values(metric, label)` query) reads:
 * every identifier that is not a function, a keyword, a label inside `{…}` or a label list of
 * `by`/`without`/`on`/`ignoring`/`group_*`, nor part of a number, a duration or a `$variable`.
 */
export function metricNames(expr: string): string[] {
  const text = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\blabel_values\s*\(\s*([^,()]*(?:\{[^}]*\})?)\s*,\s*[a-zA-Z_]\w*\s*\)/g, ' $1 ')
    .replace(/\blabel_values\s*\(\s*[a-zA-Z_]\w*\s*\)/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, ' ');
  const names = new Set<string>();
  for (const match of text.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = match[0];
    const start = match.index;
    if (start > 0 && /[0-9.$]/.test(text[start - 1] ?? '')) continue;
    if (/^\s*\(/.test(text.slice(start + word.length))) continue;
    if (KEYWORDS.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names];
}

interface RuleGroups {
  groups: Array<{ name: string; rules: Array<{ alert?: string; record?: string; expr: string }> }>;
}

export function readRules(path = RULES_FILE): RuleGroups {
  return parseYaml(readFileSync(path, 'utf8')) as RuleGroups;
}

/** Every PromQL text of a Grafana dashboard: panel targets (rows' nested panels too) and query variables. */
export function dashboardQueries(dashboard: unknown): string[] {
  const out: string[] = [];
  const walk = (node: unknown, key?: string): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    if (node === null || typeof node !== 'object') {
      if (typeof node === 'string' && (key === 'expr' || key === 'definition')) out.push(node);
      return;
    }
    const record = node as Record<string, unknown>;
    for (const [k, v] of Object.entries(record)) {
      // A query variable keeps its text in `query` (a string, or `{ query }` in newer dashboards).
      if (k === 'query' && record.type === 'query') {
        if (typeof v === 'string') out.push(v);
        else if (v && typeof v === 'object' && typeof (v as { query?: unknown }).query === 'string')
          out.push((v as { query: string }).query);
        continue;
      }
      walk(v, k);
    }
  };
  walk(dashboard);
  return out;
}

export function readDashboard(path = DASHBOARD_FILE): unknown {
  return JSON.parse(readFileSync(path, 'utf8')) as unknown;
}

/** Each query that reads a name not in `known`, with the unknown names (empty: all known). */
export function unknownNames(
  queries: readonly string[],
  known: ReadonlySet<string>,
): Array<{ query: string; names: string[] }> {
  return queries
    .map((query) => ({ query, names: metricNames(query).filter((name) => !known.has(name)) }))
    .filter((entry) => entry.names.length > 0);
}
