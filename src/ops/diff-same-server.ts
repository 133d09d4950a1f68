import {
  classifyTask,
  FIRST_CHUNK_SPAN,
  needsSiblings,
  nextChunkSpan,
  type Finding,
  type TaskRole,
} from '../core/diff.js';
import { normalizeKey } from '../core/diff-keys.js';
import {
  businessKeyBound,
  chunkSuspects,
  countChunkTasks,
  keySiblings,
  nextTaskId,
  nullKeyBusinessRows,
  orphanChunk,
  ROLE_DONE,
  ROLE_OPEN,
  taskIdRange,
  type SuspectRow,
} from '../db/sql/diff.js';
import { withReadOnly } from '../db/sql/diff-readonly.js';
import { toId, toText } from '../db/task-sql.js';
import type { Queryable } from '../db/types.js';
import type { PreparedRule } from './diff-prepare.js';

/**
 * The same-server diff: the database joins. The task walk reads the task table by primary-key
 * ranges sized toward `chunkTimeMs` and the orphan walk reads the business table in key order,
 * concurrently on two connections, each in its own read-only transaction; memory holds one
 * chunk's suspects at a time.
 */
export interface WalkOptions {
  chunkTimeMs: number;
  emit: (finding: Finding) => void | Promise<void>;
  progress: (text: string) => void;
}

export function roleOfCode(code: unknown): TaskRole {
  const n = Number(code);
  return n === ROLE_DONE ? 'done' : n === ROLE_OPEN ? 'open' : 'other';
}

export async function runSameServer(
  p: PreparedRule,
  options: WalkOptions,
): Promise<{ tasksChecked: number }> {
  const state = { tasksDone: 0, taskProgress: '', orphanProgress: '' };
  const show = () => options.progress([state.taskProgress, state.orphanProgress].filter(Boolean).join(' · '));
  const [tasksChecked] = await Promise.all([
    withReadOnly(p.source.db, (q) =>
      walkTasks(q, p, options, (text) => {
        state.taskProgress = text;
        show();
      }),
    ),
    p.rule.business.orphans
      ? withReadOnly(p.businessDb, (q) =>
          walkOrphans(q, p, options, (text) => {
            state.orphanProgress = text;
            show();
          }),
        )
      : undefined,
  ]);
  return { tasksChecked };
}

async function walkTasks(
  q: Queryable,
  p: PreparedRule,
  options: WalkOptions,
  progress: (text: string) => void,
): Promise<number> {
  const idColumn = p.source.columns.find((c) => p.task.id === p.source.db.dialect.quoteId(c.name));
  const chunkable = !idColumn || /int/.test(idColumn.dataType);
  if (!chunkable) {
    // Ids that are not integers cannot be ranged by arithmetic: one pass (still only suspects come back).
    const suspects = await chunkSuspects(q, p.task, p.business, undefined, p.rule.business.expect);
    await classifySuspects(q, p, suspects, options);
    return countChunkTasks(q, p.task, undefined);
  }
  const range = await taskIdRange(q, p.task);
  if (!range) return 0;
  const [min, max] = range;
  // Without a time window the rule's tasks are counted once from the (biz type, key) index; with
  // one, each chunk counts its own (the window's column is in the rows just read).
  const perChunkCount = p.task.window.sql !== '1=1';
  // The count reads another index than the walk: on its own connection it runs alongside.
  const counted = perChunkCount
    ? undefined
    : withReadOnly(p.source.db, (q2) => countChunkTasks(q2, p.task, { lo: min, hi: max }));
  counted?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
  let checked = 0;
  let lo = min;
  let span = FIRST_CHUNK_SPAN;
  for (;;) {
    const hi = Math.min(max, lo + span - 1);
    const started = performance.now();
    const suspects = await chunkSuspects(q, p.task, p.business, { lo, hi }, p.rule.business.expect);
    if (perChunkCount) checked += await countChunkTasks(q, p.task, { lo, hi });
    span = nextChunkSpan(span, performance.now() - started, options.chunkTimeMs);
    await classifySuspects(q, p, suspects, options);
    progress(
      `tasks: id ${hi.toLocaleString('en-US')} of ${max.toLocaleString('en-US')} (${Math.floor(((hi - min + 1) / (max - min + 1)) * 100)}%)`,
    );
    if (hi >= max) break;
    const next = await nextTaskId(q, p.task, hi + 1);
    if (next === undefined || next > max) break;
    lo = next;
  }
  return counted ?? checked;
}

/** Classifies one chunk's suspects, looking up the other tasks of a key only where it matters. */
async function classifySuspects(
  q: Queryable,
  p: PreparedRule,
  suspects: SuspectRow[],
  options: WalkOptions,
): Promise<void> {
  const expect = p.rule.business.expect;
  const keyed = suspects.filter((s) => s.k !== null && needsSiblings(roleOfCode(s.r), Number(s.n), expect));
  const siblings = new Map<string, { tasks: number; done: number }>();
  const keys = [...new Map(keyed.map((s) => [normalizeKey(s.k, p.taskSemantics) as string, s.k])).values()];
  for (let i = 0; i < keys.length; i += 500) {
    for (const row of await keySiblings(q, p.task, keys.slice(i, i + 500))) {
      siblings.set(normalizeKey(row.k, p.taskSemantics) as string, {
        tasks: Number(row.tasks),
        done: Number(row.done),
      });
    }
  }
  for (const s of suspects) {
    const role = roleOfCode(s.r);
    const rows = Number(s.n);
    const sib = s.k === null ? undefined : siblings.get(normalizeKey(s.k, p.taskSemantics) as string);
    const kind = classifyTask(
      role,
      { rows, tasks: sib?.tasks ?? 1, doneTasks: sib?.done ?? (role === 'done' ? 1 : 0) },
      expect,
    );
    if (!kind) continue;
    const key = toText(s.k);
    await options.emit({
      kind,
      rule: p.rule.name,
      taskId: toId(s.id),
      key,
      bizId: p.rule.taskKey === 'bizId' ? key : null,
      eventId: toText(s.e),
      status: p.source.sql.logicalStatus(s.s),
      businessRows: rows,
    });
  }
}

async function walkOrphans(
  q: Queryable,
  p: PreparedRule,
  options: WalkOptions,
  progress: (text: string) => void,
): Promise<void> {
  const emitOrphan = (key: unknown, rows: number) =>
    options.emit({
      kind: 'orphan',
      rule: p.rule.name,
      taskId: null,
      key: toText(key),
      bizId: null,
      eventId: null,
      status: null,
      businessRows: rows,
    });
  if (!p.businessKeyIndexed) {
    for (const row of await orphanChunk(q, p.task, p.business, undefined, undefined))
      await emitOrphan(row.k, Number(row.n));
  } else {
    let after: unknown = undefined;
    let span = FIRST_CHUNK_SPAN;
    let seen = 0;
    for (;;) {
      const started = performance.now();
      const bound = await businessKeyBound(q, p.business, after, span - 1);
      const orphans = await orphanChunk(q, p.task, p.business, after, bound?.key);
      for (const row of orphans) await emitOrphan(row.k, Number(row.n));
      seen += span;
      progress(`business keys: ~${seen.toLocaleString('en-US')}`);
      if (!bound) break;
      after = bound.key;
      span = nextChunkSpan(span, performance.now() - started, options.chunkTimeMs);
    }
  }
  const nullRows = await nullKeyBusinessRows(q, p.business);
  if (nullRows > 0) await emitOrphan(null, nullRows);
}
