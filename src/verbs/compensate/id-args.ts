import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { IdRange } from '../../db/port/index.js';
import { usageError } from '../../errors.js';
import { hasNumericId, parseTaskId } from '../../ops/task-id.js';

/**
 * The positional arguments of `compensate`: task ids, space or comma separated, and on a table
 * with whole-number ids inclusive ranges `LO-HI` (as artisan's `queue:retry --range=11-13`).
 * A range is never expanded: it selects by `BETWEEN`, so 1-100000000 costs what its rows cost.
 * Throws a usage error (exit 3) naming a malformed or reversed range.
 */
export function parseIdArgs(
  source: BoundSource,
  argv: readonly string[],
): { ids: TaskId[]; ranges: IdRange[] } {
  const ids: TaskId[] = [];
  const ranges: IdRange[] = [];
  const numeric = hasNumericId(source);
  for (const arg of argv.flatMap((a) => a.split(',')).map((a) => a.trim())) {
    if (arg === '') continue;
    if (!numeric || !arg.includes('-')) {
      ids.push(parseTaskId(source, arg));
      continue;
    }
    const bounds = /^(\d+)-(\d+)$/.exec(arg);
    if (!bounds) throw usageError(`'${arg}' is not an id range: write it LO-HI, whole numbers, e.g. 11-13`);
    const [lo, hi] = [bounds[1] as string, bounds[2] as string];
    if (BigInt(lo) > BigInt(hi))
      throw usageError(
        `'${arg}' is a reversed id range: write it LO-HI with LO not above HI, e.g. ${hi}-${lo}`,
      );
    ranges.push({ lo: parseTaskId(source, lo), hi: parseTaskId(source, hi) });
  }
  return { ids, ranges };
}
