import type { ColumnInfo } from '../../db/types.js';

/** One column that is not the same on every shard: which shards differ from the first, and how. */
export interface ShardDrift {
  column: string;
  /** The first shard's form of the column (`missing` when it lacks it). */
  expected: string;
  /** The shards whose column differs, each with its form. */
  differing: { shard: string; form: string }[];
}

const form = (c: ColumnInfo | undefined): string =>
  c ? `${c.columnType.toLowerCase()}${c.nullable ? ' null' : ' not null'}` : 'missing';

/**
 * Schema drift between shards: every column of every shard's table compared with the first
 * shard's. A shard added by a migration that missed it (a column absent, a type widened on some)
 * reads differently from the rest, so a merged answer would mix two meanings.
 */
export function schemaDrift(
  shards: readonly { name: string; columns: readonly ColumnInfo[]; engine?: unknown }[],
): ShardDrift[] {
  const [first, ...rest] = shards;
  if (!first || rest.length === 0) return [];
  const index = (cols: readonly ColumnInfo[]) => new Map(cols.map((c) => [c.name.toLowerCase(), c]));
  const base = index(first.columns);
  // Types of two engines are not comparable (int(11) and integer): a shard on another engine than
  // the first is compared by which columns it has.
  const others = rest.map((s) => ({
    name: s.name,
    cols: index(s.columns),
    sameEngine: s.engine === first.engine,
  }));
  const names = new Set([...base.keys(), ...others.flatMap((o) => [...o.cols.keys()])]);
  const drift: ShardDrift[] = [];
  for (const column of [...names].sort()) {
    const theirs = base.get(column);
    const expected = form(theirs);
    const differing = others
      .map((o) => {
        const own = o.cols.get(column);
        return { shard: o.name, form: o.sameEngine || !own || !theirs ? form(own) : expected };
      })
      .filter((d) => d.form !== expected);
    if (differing.length > 0) drift.push({ column, expected, differing });
  }
  return drift;
}

/** One line per drifting column, naming the shards (for errors and doctor). */
export function driftLines(drift: readonly ShardDrift[], firstShard: string): string[] {
  return drift.map(
    (d) =>
      `column ${d.column}: ${firstShard} has ${d.expected}; ${d.differing.map((x) => `${x.shard} has ${x.form}`).join(', ')}`,
  );
}
