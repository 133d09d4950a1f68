import type { Row } from '../../types.js';
import type { ReadPlan } from '../types.js';

/** PostgreSQL's EXPLAIN (FORMAT JSON) plans as taskrecon reads them: the indexes, whether a scan reads the table, text lines. */

interface PlanNode {
  'Node Type'?: string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Schema?: string;
  Alias?: string;
  'Plan Rows'?: number;
  'Index Cond'?: string;
  Filter?: string;
  Strategy?: string;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}

/** The plan entries of EXPLAIN (FORMAT JSON) rows: one row, one column (`QUERY PLAN`), as text or parsed. */
function planEntries(plan: Row[]): PlanNode[] {
  const out: PlanNode[] = [];
  for (const row of plan) {
    const value = row['QUERY PLAN'];
    const parsed = (typeof value === 'string' ? JSON.parse(value) : value) as Array<{ Plan?: PlanNode }>;
    for (const entry of parsed ?? []) if (entry.Plan) out.push(entry.Plan);
  }
  return out;
}

/**
 * A plan as the lines of EXPLAIN's text form, shortened: each node's type with the index it reads
 * and the table it reads (`Index Scan using idx_… on async_task`), the planner's row estimate, and
 * the index condition or filter under it; children indented under their parent.
 */
export function postgresPlanLines(plan: Row[]): string[] {
  const lines: string[] = [];
  const visit = (node: PlanNode, depth: number): void => {
    const pad = '  '.repeat(depth);
    const type = node['Node Type'] ?? '?';
    const strategy = node.Strategy && node.Strategy !== 'Plain' ? ` (${node.Strategy})` : '';
    const relation = node['Relation Name']
      ? `${node['Relation Name']}${node.Alias && node.Alias !== node['Relation Name'] ? ` ${node.Alias}` : ''}`
      : undefined;
    let text = `${type}${strategy}`;
    if (node['Index Name'] && type === 'Bitmap Index Scan') text += ` on ${node['Index Name']}`;
    else if (node['Index Name']) text += ` using ${node['Index Name']}`;
    if (relation) text += ` on ${relation}`;
    if (node['Plan Rows'] !== undefined) text += `  (rows=${node['Plan Rows']})`;
    lines.push(`${pad}${depth > 0 ? '-> ' : ''}${text}`);
    const inner = `${pad}${depth > 0 ? '   ' : ''}  `;
    if (node['Index Cond']) lines.push(`${inner}Index Cond: ${node['Index Cond']}`);
    if (node.Filter) lines.push(`${inner}Filter: ${node.Filter}`);
    for (const child of node.Plans ?? []) visit(child, depth + 1);
  };
  for (const root of planEntries(plan)) visit(root, 0);
  return lines;
}

/** Every node of a plan, parents before their children. */
function planNodes(plan: Row[]): PlanNode[] {
  const out: PlanNode[] = [];
  const visit = (node: PlanNode): void => {
    out.push(node);
    for (const child of node.Plans ?? []) visit(child);
  };
  for (const root of planEntries(plan)) visit(root);
  return out;
}

/**
 * The indexes an EXPLAIN (FORMAT JSON) plan reads through; a Seq Scan reads every row. One row,
 * one column (`QUERY PLAN`), holding the JSON as text or parsed.
 */
export function postgresReadPlan(plan: Row[]): ReadPlan {
  const nodes = planNodes(plan);
  return {
    indexes: [...new Set(nodes.flatMap((n) => (n['Index Name'] ? [n['Index Name']] : [])))],
    fullScan: nodes.some((n) => n['Node Type'] === 'Seq Scan'),
  };
}

/** Whether every scan of an EXPLAIN (FORMAT JSON) plan is an Index Only Scan, and nothing sorts. */
export function postgresIndexOnly(plan: Row[]): boolean {
  const types = planNodes(plan).map((n) => n['Node Type'] ?? '');
  const scans = types.filter((t) => /Scan$/.test(t));
  return (
    scans.length > 0 && scans.every((t) => t === 'Index Only Scan') && !types.some((t) => /Sort$/.test(t))
  );
}
