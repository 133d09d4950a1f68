import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskreconError } from '../errors.js';

/**
 * The time limit every read statement runs under (config `maxStatementTime`, `--max-statement-time`),
 * so that no reconciliation query can hold a production primary for minutes. Each engine applies it
 * in its own syntax (`db/engines/<engine>/`); when it fires the run stops with exit 3, naming
 * the statement and the index that would let it finish.
 */

/** 30 s: far above any index-served statement, far below what an operator would wait for cron. */
export const DEFAULT_MAX_STATEMENT_TIME_MS = 30_000;

/** A stack to name a statement by, taken when it starts (the frames format only when read). */
export function statementSite(): { stack?: string } {
  const site: { stack?: string } = {};
  Error.captureStackTrace(site, statementSite);
  return site;
}

/**
 * A short label for the statement: `<module>.<function>` of the first frame in the SQL modules
 * (`scan.countDue`), else the first frame outside the connection code.
 */
export function statementLabel(site: { stack?: string }): string {
  const frames = (site.stack ?? '').split('\n').slice(1);
  const parse = (line: string) => {
    const m = /at (?:async )?(?:(\S+) \()?(file:\/\/)?([^():]+):(\d+):(\d+)\)?$/.exec(line.trim());
    if (!m) return undefined;
    const fn = (m[1] ?? '<anonymous>').replace(/^.*\./, '');
    const file = m[2] ? fileURLToPath(`file://${m[3]}`) : (m[3] ?? '');
    const path = sourceOf(file, Number(m[4]), Number(m[5])) ?? file;
    const module = path.replace(/^.*[/\\]/, '').replace(/\.[cm]?[jt]s$/, '');
    return { fn, module, path };
  };
  const parsed = frames.map(parse).filter((f): f is NonNullable<typeof f> => f !== undefined);
  const sqlFrame = parsed.find((f) => /[/\\]db[/\\]sql[/\\]/.test(f.path));
  const other = parsed.find((f) => !/[/\\]db[/\\](engines[/\\]|statement-limit\.[jt]s$)/.test(f.path));
  const frame = sqlFrame ?? other;
  return frame ? `${frame.module}.${frame.fn}` : 'a read statement';
}

/** Source maps of bundled files, by file (null: the file has none). */
const sourceMaps = new Map<string, SourceMap | null>();

/**
 * The module a line of a bundled file came from, by the source map the build writes beside each
 * bundled command and chunk (scripts/bundle-commands.js); undefined for a file that is not bundled.
 */
function sourceOf(file: string, line: number, column: number): string | undefined {
  let map = sourceMaps.get(file);
  if (map === undefined) {
    try {
      map = new SourceMap(
        JSON.parse(readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0],
      );
    } catch {
      map = null;
    }
    sourceMaps.set(file, map);
  }
  const entry = map?.findEntry(line - 1, column - 1) as { originalSource?: string } | undefined;
  return entry?.originalSource ? join(dirname(file), entry.originalSource) : undefined;
}

/**
 * The index that lets a statement finish (the ones `doctor` recommends), by label; a statement
 * not named here is pointed at doctor.
 */
const INDEX_FOR: Record<string, string> = {
  'scan.countByBizTypeAndStatus': '(status, biz_type)',
  'scan.countByStatus': '(status, next_retry_time)',
  'scan-counts.countByStatus': '(status, next_retry_time)',
  'scan-counts.countByStatusAndBizType': '(status, biz_type)',
  'scan.countDue': '(status, biz_type, next_retry_time, updated_at)',
  'scan.countStuck': '(status, biz_type, next_retry_time, updated_at)',
  'scan.countPerBizType': '(status, biz_type, next_retry_time, updated_at)',
  'scan.listRows': '(status, next_retry_time)',
  'scan.listBatches': '(status, next_retry_time)',
  'scan.listEncoded': '(status, next_retry_time)',
  'list-ahead.pageBoundary': '(status, next_retry_time)',
  'list-ahead.readAhead': '(status, next_retry_time)',
  'list-ahead.pageRows': '(status, next_retry_time)',
  'report.windowAggregate': '(created_at)',
  'report.latencyHistogram': '(created_at)',
  'report.countFailedOpen': '(status, next_retry_time)',
  'report.countByBizType': '(status, biz_type)',
  'report.latestFailure': '(status, biz_type)',
};

export function indexHintFor(label: string): string | undefined {
  return INDEX_FOR[label];
}

/** The error a fired time limit becomes: exit 3, the statement named, what would help. */
export function statementTimeoutError(error: unknown, label: string, limitMs: number): TaskreconError {
  const index = indexHintFor(label);
  const seconds = Number((limitMs / 1000).toFixed(3));
  return new TaskreconError(
    `statement ${label} ran longer than the ${seconds}s statement time limit and was stopped; nothing it read is reported`,
    {
      code: 'STATEMENT_TIMEOUT',
      hint:
        (index ? `An index on ${index} lets it finish quickly; ` : '') +
        '`taskrecon doctor` names the indexes this table lacks (with the CREATE INDEX). ' +
        'Run it on a read replica with --read-db, or raise --max-statement-time (config maxStatementTime) if the wait is acceptable.',
      cause: error,
    },
  );
}
